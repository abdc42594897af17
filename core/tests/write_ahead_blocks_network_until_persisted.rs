//! Write-ahead: an attempt sends nothing until its latest revision is in
//! durable storage, so the id a request carries is always an id a reload
//! finds.

mod support;

use support::*;
use upload_once_core::attempt::Step;
use upload_once_core::retry::RetryPolicy;
use upload_once_core::scheduler::{Command, Outcome, Scheduler};

#[test]
fn a_new_attempt_waits_until_it_is_stored() {
    let mut s = Scheduler::new(RetryPolicy::default(), 4);
    s.set_hash_limit(0); // whole-file hashing: its own tests
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

#[test]
fn every_change_must_be_stored_before_the_next_request() {
    let mut server = FakeServer::new(ServerConfig::default());
    let mut rng = TestRng::new(2);
    let mut s = Scheduler::new(RetryPolicy::default(), 4);
    s.set_hash_limit(0); // whole-file hashing: its own tests
    let r = record(1, 10);
    let id = r.id;
    s.insert(r, true, true, 1);
    let Some(Command::Authorize { request, .. }) = s.poll(T0) else { panic!() };
    s.handle(&id, Outcome::Authorize(server.authorize(&request, T0)), T0, &mut rng);
    let revision = s.record(&id).unwrap().revision;
    assert!(revision > 1);
    assert_eq!(s.take_dirty(), vec![id]);
    assert_eq!(s.poll(T0), None, "the authorized record is not stored yet");
    s.mark_persisted(&id, revision - 1);
    assert_eq!(s.poll(T0), None, "an older revision does not count");
    s.mark_persisted(&id, revision);
    assert!(matches!(s.poll(T0), Some(Command::Upload { .. })));
}

#[test]
fn stored_revisions_never_go_backwards() {
    let mut s = Scheduler::new(RetryPolicy::default(), 4);
    s.set_hash_limit(0); // whole-file hashing: its own tests
    let r = record(1, 10);
    let id = r.id;
    s.insert(r, true, true, 0);
    s.mark_persisted(&id, 1);
    s.mark_persisted(&id, 0);
    assert!(s.is_persisted(&id), "a late acknowledgement of an older write does not un-store");
}

#[test]
fn status_checks_wait_for_storage_too() {
    let mut s = Scheduler::new(RetryPolicy::default(), 4);
    s.set_hash_limit(0); // whole-file hashing: its own tests
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
    let mut s = Scheduler::new(RetryPolicy::default(), 4);
    s.set_hash_limit(0); // whole-file hashing: its own tests
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
    let mut s = Scheduler::new(RetryPolicy::default(), 4);
    s.set_hash_limit(0); // whole-file hashing: its own tests
    let mut r = record(1, 10);
    r.step = Step::Upload;
    r.object_key = Some("uploads/1".into());
    r.upload = None;
    let revision = r.revision;
    s.insert(r, true, true, revision);
    assert!(!s.has_dirty());
    assert_eq!(s.poll(T0), None, "the changed record is stored before it acts");
    assert!(s.has_dirty(), "and the caller is told to store it, then poll again");
}
