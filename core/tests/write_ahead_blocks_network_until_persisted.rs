//! Write-ahead: an attempt sends nothing until its record is in durable
//! storage, so the id a request carries is always an id a reload finds; nor
//! until every later change a reload could not do without is stored (its
//! retries, its terminal states). The answers the server keeps the last word
//! on are stored without holding the next step (docs/protocol.md §5.1).

mod support;

use support::*;
use upload_once_core::attempt::Step;
use upload_once_core::error::ErrorCode;
use upload_once_core::retry::RetryPolicy;
use upload_once_core::scheduler::{Command, Outcome, Scheduler};
use upload_once_core::wire::UploadInstruction;

#[test]
fn a_new_attempt_waits_until_it_is_stored() {
    let mut s = new_scheduler(4);
    let r = record(1, 10);
    let id = r.id;
    s.insert(r, true, true, 0);
    assert!(!s.is_persisted(&id));
    assert_eq!(s.poll(T0), None, "not stored yet: no request");
    assert!(!s.is_idle(), "but there is work to do");
    assert_eq!(s.take_dirty(), vec![id]);
    assert_eq!(s.take_dirty(), Vec::<uuid::Uuid>::new(), "taken once");
    assert_eq!(s.poll(T0), None, "taking the dirty list is not storing");
    s.mark_persisted(&id, 1);
    assert!(matches!(s.poll(T0), Some(Command::Authorize { .. })));
}

/// A scheduler with one stored attempt whose authorize is on the wire.
fn authorizing_one() -> (Scheduler, uuid::Uuid, upload_once_core::wire::AuthorizeRequest) {
    let mut s = new_scheduler(4);
    let r = record(1, 10);
    let id = r.id;
    s.insert(r, true, true, 1);
    let Some(Command::Authorize { request, .. }) = s.poll(T0) else { panic!("the authorize goes first") };
    (s, id, request)
}

/// [`authorizing_one`], changed by `hold`, then answered by a fake server
/// (the generator seeded with `seed`): asserts the PUT waits (`why`) until
/// the answered record is stored, and then goes.
fn the_put_waits_for_the_answered_record(seed: u64, why: &str, hold: impl FnOnce(&mut Scheduler, uuid::Uuid)) {
    let (mut server, mut rng) = default_server_and_rng(seed);
    let (mut s, id, request) = authorizing_one();
    hold(&mut s, id);
    s.handle(&id, Outcome::Authorize(server.authorize(&request, T0)), T0, &mut rng);
    assert_eq!(s.poll(T0), None, "{why}");
    let revision = s.record(&id).unwrap().revision;
    s.mark_persisted(&id, revision);
    assert!(matches!(s.poll(T0), Some(Command::Upload { .. })));
}

#[test]
fn a_failure_is_stored_before_the_next_try() {
    let mut rng = TestRng::new(2);
    let (mut s, id, _) = authorizing_one();
    s.handle(&id, Outcome::Authorize(Err(problem(503, ErrorCode::Internal, "down"))), T0, &mut rng);
    let revision = s.record(&id).unwrap().revision;
    assert!(revision > 1);
    assert_eq!(s.take_dirty(), vec![id]);
    let later = T0.saturating_add(60_000);
    assert_eq!(s.poll(later), None, "the retry count is not stored yet: no second try");
    s.mark_persisted(&id, revision - 1);
    assert_eq!(s.poll(later), None, "an older revision does not count");
    s.mark_persisted(&id, revision);
    assert!(matches!(s.poll(later), Some(Command::Authorize { .. })));
}

#[test]
fn the_answers_the_server_keeps_do_not_hold_the_next_step() {
    // docs/protocol.md §5.1: for a file in one PUT, the authorize's URL and
    // the PUT's success are stored, but the PUT and the confirm that follow
    // them do not wait for those writes (issue 34: each held a file 40–60 ms
    // on a phone's CPU).
    let (mut server, mut rng) = default_server_and_rng(2);
    let (mut s, id, request) = authorizing_one();
    s.handle(&id, Outcome::Authorize(server.authorize(&request, T0)), T0, &mut rng);
    assert!(s.record(&id).unwrap().revision > 1);
    assert_eq!(s.take_dirty(), vec![id], "the answer is stored");
    let Some(Command::Upload { instruction, .. }) = s.poll(T0) else { panic!("the PUT waits for the write") };
    server.put_signed(&instruction, 10, T0).unwrap();
    s.handle(&id, Outcome::Upload(Ok(())), T0, &mut rng);
    assert_eq!(s.take_dirty(), vec![id], "the PUT's success is stored");
    assert!(matches!(s.poll(T0), Some(Command::Confirm { .. })), "the confirm waits for the write");
}

#[test]
fn stored_revisions_never_go_backwards() {
    let mut s = new_scheduler(4);
    let r = record(1, 10);
    let id = r.id;
    s.insert(r, true, true, 0);
    s.mark_persisted(&id, 1);
    s.mark_persisted(&id, 0);
    assert!(s.is_persisted(&id), "a late acknowledgement of an older write does not un-store");
}

#[test]
fn status_checks_wait_for_storage_too() {
    let mut s = new_scheduler(4);
    let mut r = record(1, 10);
    let stored = r.revision;
    r.restore(T0);
    let id = r.id;
    s.insert(r, true, true, stored);
    assert_eq!(s.record(&id).unwrap().step, Step::Check);
    assert_eq!(s.poll(T0), None, "the restore changed the record: store it first");
    assert_eq!(s.take_dirty(), vec![id]);
    s.mark_persisted(&id, s.record(&id).unwrap().revision);
    assert_eq!(s.poll(T0), Some(Command::Status { ids: vec![id] }));
}

#[test]
fn dirty_records_are_listed_once_in_change_order() {
    let mut s = new_scheduler(4);
    let (a, b) = (record(1, 10), record(2, 10));
    let (ida, idb) = (a.id, b.id);
    s.insert(b, true, true, 0);
    s.insert(a, true, true, 0);
    assert!(s.cancel(&idb, T0)); // b changes again while still dirty
    assert_eq!(s.take_dirty(), vec![idb, ida]);
}

#[test]
fn with_slow_storage_no_request_ever_outruns_its_record() {
    // The sim checks, for every polled command, that IndexedDB already holds
    // the revision the attempt had when it was polled. Storage is deferred
    // at random, with faults and reloads in between.
    for seed in 0..20 {
        let mut sim = Sim::new(SimConfig { seed, defer_persist: 0.7, ..SimConfig::default() });
        sim.faults.random = Some(RandomFaults { probability: 0.3, weights: [1, 1, 1, 1, 1], max_retry_after_ms: 0 });
        for _ in 0..4 {
            sim.add_jpeg(100);
        }
        for step in 0..200 {
            if step % 37 == 36 {
                sim.reload(Reload { lose_blob: 0.0, inflight_reached_server: 0.5 });
            }
            if sim.tick() == Tick::Idle {
                break;
            }
        }
        sim.faults.enabled = false;
        sim.run_until_idle();
        for sent in &sim.stats.sent {
            for id in command_ids(&sent.command) {
                assert!(sim.db.contains_key(&id), "{id} was sent but never stored");
            }
        }
        sim.check_exactly_once().unwrap();
    }
}

#[test]
fn a_record_changed_by_poll_is_reported_dirty_so_the_caller_does_not_sleep() {
    // Authorized, but without a URL (e.g. restored after the URL was
    // dropped): the next poll turns the upload into a renew.
    let mut s = new_scheduler(4);
    let mut r = record(1, 10);
    r.step = Step::Upload;
    r.object_key = Some("uploads/1".into());
    r.upload = None;
    insert_stored(&mut s, [r]);
    assert!(!s.has_dirty());
    assert_eq!(s.poll(T0), None, "the changed record is stored before it acts");
    assert!(s.has_dirty(), "and the caller is told to store it, then poll again");
}

/// What a page does with a part command of attempt `id`, answered at once
/// by `server`, except the sends: those are returned, left on the wire.
fn answer_part_work(
    s: &mut Scheduler,
    server: &mut FakeServer,
    rng: &mut TestRng,
    id: uuid::Uuid,
) -> Vec<(u32, u64, UploadInstruction)> {
    let mut on_wire = Vec::new();
    while let Some(command) = s.poll(T0) {
        match command {
            Command::HashPart { number, .. } => {
                s.handle(&id, Outcome::PartHashed { number, result: Ok(fake_sha("big", number)) }, T0, rng)
            }
            Command::SignParts { request, .. } => {
                s.handle(&id, Outcome::PartsSigned(server.sign_parts(id, &request, T0)), T0, rng)
            }
            Command::UploadPart { number, start, end, instruction, .. } => {
                on_wire.push((number, end - start, instruction))
            }
            other => panic!("not part work: {other:?}"),
        }
    }
    on_wire
}

/// A part the store took goes into the ledger, and the ledger is written,
/// but the next parts do not wait for that write: a reload asks the store
/// which parts it holds, and the store wins. The last part is different:
/// the confirm that follows waits until the record saying so is stored.
#[test]
fn a_part_written_into_the_ledger_does_not_hold_the_next_parts() {
    let config = ServerConfig { multipart_threshold: 20, part_size: 5, ..ServerConfig::default() };
    let mut server = FakeServer::new(config);
    let mut rng = TestRng::new(3);
    let mut s = new_scheduler(4);
    let r = record(1, 48); // 10 parts of 5 bytes (the last of 3)
    let id = r.id;
    insert_stored(&mut s, [r]);
    let Some(Command::Authorize { request, .. }) = s.poll(T0) else { panic!("an authorize") };
    s.handle(&id, Outcome::Authorize(server.authorize(&request, T0)), T0, &mut rng);
    assert_eq!(s.poll(T0), None, "the authorized record is stored first (write-ahead)");
    let authorized = s.record(&id).unwrap().revision;
    s.take_dirty();
    s.mark_persisted(&id, authorized);

    let mut on_wire = answer_part_work(&mut s, &mut server, &mut rng, id);
    assert_eq!(on_wire.len(), 3, "three parts at once");
    let mut sent = 3;
    while !on_wire.is_empty() {
        let (number, size, instruction) = on_wire.remove(0);
        let result = server.put_part(&instruction, size, &fake_sha("big", number), T0);
        s.handle(&id, Outcome::PartSent { number, result }, T0, &mut rng);
        let complete = s.record(&id).unwrap().multipart.as_ref().unwrap().is_complete();
        assert!(s.take_dirty().contains(&id), "the ledger is to be written");
        if !complete {
            assert!(!s.is_persisted(&id), "and it is not written yet");
        }
        // Nothing of the ledger is stored, and yet the next part goes.
        let more = answer_part_work(&mut s, &mut server, &mut rng, id);
        sent += more.len();
        if sent < 10 {
            assert!(!more.is_empty() || !on_wire.is_empty(), "part {number} stored: the next one goes at once");
        }
        on_wire.extend(more);
    }
    assert_eq!(sent, 10);
    assert_eq!(s.poll(T0), None, "the last part: the confirm waits for the record");
    s.mark_persisted(&id, s.record(&id).unwrap().revision);
    assert!(matches!(s.poll(T0), Some(Command::Confirm { .. })));
}

/// The content hash is written with the record, but the authorize that
/// carries it does not wait for that write: after a reload, a record without
/// it hashes the same bytes again and sends the same request.
#[test]
fn a_content_hash_does_not_hold_the_authorize() {
    let mut rng = TestRng::new(4);
    let mut s = Scheduler::new(RetryPolicy::default(), 4);
    s.set_hash_limit(64 << 20);
    let r = record(1, 10);
    let id = r.id;
    insert_stored(&mut s, [r]);
    assert!(matches!(s.poll(T0), Some(Command::HashFile { .. })));
    s.handle(&id, Outcome::FileHashed(Ok(fake_sha("photo", 0))), T0, &mut rng);
    assert_eq!(s.take_dirty(), vec![id], "the hash is to be written");
    assert!(!s.is_persisted(&id));
    let Some(Command::Authorize { request, .. }) = s.poll(T0) else { panic!("the authorize goes at once") };
    assert_eq!(request.sha256, Some(fake_sha("photo", 0)));
}

#[test]
fn a_session_token_a_reload_would_not_find_is_stored_before_the_put() {
    // The page passes `hold` when the authorizing session is not its own
    // stored one (it joined again meanwhile): then the record must carry it.
    the_put_waits_for_the_answered_record(3, "the token is not stored yet", |s, id| {
        s.set_session_token(&id, "an-earlier-session", true, T0)
    });
}

#[test]
fn while_storage_fails_every_change_holds_its_attempt() {
    // The page's writes fail (another tab took the database): the answers
    // otherwise stored without holding the next step hold it too, so no
    // bytes go on a state that is not on disk.
    the_put_waits_for_the_answered_record(4, "no PUT before the answer is stored", |s, _| s.set_hold_all(true));
}
