//! Status checks are batched: at most 500 ids per request, every due check
//! exactly once, and a partial answer only retries what it left out.

mod support;

use std::collections::BTreeSet;

use support::*;
use upload_once_core::attempt::{Confirmation, ModerationView, Step};
use upload_once_core::scheduler::{Command, Scheduler};
use upload_once_core::wire::{MAX_STATUS_IDS, StatusResponse};
use uuid::Uuid;

/// `n` restored (checking) and stored records.
fn checking(n: u128, concurrency: usize) -> (Scheduler, Vec<Uuid>) {
    let mut s = new_scheduler(concurrency);
    let mut ids = Vec::new();
    for i in 1..=n {
        let mut r = record(i, 10);
        r.created_at = T0 + i as i64;
        r.restore(T0);
        ids.push(r.id);
        insert_stored(&mut s, [r]);
    }
    (s, ids)
}

fn status_ids(command: Option<Command>) -> Vec<Uuid> {
    match command {
        Some(Command::Status { ids }) => ids,
        other => panic!("expected a status command, got {other:?}"),
    }
}

#[test]
fn a_thousand_checks_take_two_requests_of_five_hundred() {
    assert_eq!(MAX_STATUS_IDS, 500);
    let (mut s, ids) = checking(1000, 4);
    let first = status_ids(s.poll(T0));
    let second = status_ids(s.poll(T0));
    assert_eq!(s.poll(T0), None, "no third (empty or duplicate) batch");
    assert_eq!((first.len(), second.len()), (500, 500));
    assert_eq!(first, ids[..500], "in the order the guest added them");
    assert_eq!(second, ids[500..]);
    assert_eq!(s.active(), 2);
}

#[test]
fn with_one_slot_the_second_batch_waits_for_the_first_answer() {
    let (mut s, ids) = checking(1000, 1);
    let (mut server, mut rng) = default_server_and_rng(3);
    let first = status_ids(s.poll(T0));
    assert_eq!(s.poll(T0), None);
    let answer = server.status(&first, T0);
    s.handle_status(&first, answer, T0, &mut rng);
    assert_eq!(s.active(), 0);
    // The answered ones go on to authorize; the remaining 500 are checked first.
    let second = status_ids(s.poll(T0));
    let all: BTreeSet<Uuid> = first.iter().chain(&second).copied().collect();
    assert_eq!(all, ids.iter().copied().collect(), "every id checked exactly once");
    assert_eq!(first.len() + second.len(), 1000);
}

#[test]
fn one_more_than_two_batches_makes_a_third_small_one() {
    let (mut s, _) = checking(1001, 4);
    let sizes: Vec<usize> = (0..3).map(|_| status_ids(s.poll(T0)).len()).collect();
    assert_eq!(sizes, vec![500, 500, 1]);
}

#[test]
fn checks_in_backoff_are_left_out_until_due() {
    let (mut s, ids) = checking(3, 4);
    let (mut server, mut rng) = default_server_and_rng(4);
    let batch = status_ids(s.poll(T0));
    assert_eq!(batch.len(), 3);
    // The request fails: all three back off.
    s.handle_status(&batch, Err(upload_once_core::retry::Failure::Network), T0, &mut rng);
    for id in &ids {
        assert_eq!(s.record(id).unwrap().step, Step::Check);
        assert_eq!(s.record(id).unwrap().retries, 1);
        let rev = s.record(id).unwrap().revision;
        s.mark_persisted(id, rev);
    }
    let due: Vec<i64> = ids.iter().map(|id| s.record(id).unwrap().next_retry_at.unwrap()).collect();
    let earliest = *due.iter().min().unwrap();
    if earliest > T0 {
        assert_eq!(s.poll(T0), None, "nothing is due yet");
    }
    assert_eq!(s.next_wakeup(), Some(earliest));
    let latest = *due.iter().max().unwrap();
    let batch = status_ids(s.poll(latest));
    assert_eq!(batch.len(), 3, "all due by the latest wakeup, in one batch");
    let answer = server.status(&batch, latest);
    s.handle_status(&batch, answer, latest, &mut rng);
}

#[test]
fn an_answer_that_leaves_an_id_out_retries_only_that_one() {
    let (mut s, ids) = checking(3, 4);
    let (mut server, mut rng) = default_server_and_rng(5);
    let batch = status_ids(s.poll(T0));
    let mut answer = server.status(&batch, T0).unwrap();
    answer.results.retain(|st| st.id() != ids[1]);
    answer.results.reverse(); // order does not matter, ids do
    s.handle_status(&batch, Ok(answer), T0, &mut rng);
    assert_eq!(s.record(&ids[0]).unwrap().step, Step::Authorize, "not found, no object key: authorize");
    assert_eq!(s.record(&ids[2]).unwrap().step, Step::Authorize);
    let missing = s.record(&ids[1]).unwrap();
    assert_eq!((missing.step, missing.retries), (Step::Check, 1), "left out: checked again later");
    assert_eq!(missing.error.as_ref().unwrap().code, "unexpected_response");
}

#[test]
fn a_large_restore_runs_through_the_real_server_without_exceeding_its_limit() {
    let mut sim = Sim::new(SimConfig {
        seed: 6,
        concurrency: 4,
        check_write_ahead: false,
        max_steps: 100_000,
        ..SimConfig::default()
    });
    for _ in 0..1000 {
        sim.add_jpeg(10);
    }
    sim.persist_all(); // stored, nothing sent
    sim.reload(Reload::KEEP_BLOBS);
    sim.run_until_idle();
    let batches: Vec<usize> = sim
        .stats
        .commands()
        .filter_map(|c| match c {
            Command::Status { ids } => Some(ids.len()),
            _ => None,
        })
        .collect();
    assert_eq!(batches, vec![500, 500], "the fake server refuses more than 500; two requests suffice");
    assert_eq!(sim.server.media.len(), 1000);
}

#[test]
fn a_refresh_asks_about_confirmed_media_awaiting_moderation() {
    let mut sim = Sim::with_seed(7);
    let ids: Vec<Uuid> = (0..3).map(|_| sim.add_jpeg(10)).collect();
    sim.run_until_idle();
    let media: Vec<Uuid> = ids.iter().map(|id| sim.record(*id).media.as_ref().unwrap().id).collect();
    sim.server.moderate(media[0], ModerationDecision::Approve, None, sim.now);
    sim.server.moderate(media[1], ModerationDecision::Reject, Some("blurry"), sim.now);
    sim.page_mut().refresh();
    assert!(!sim.scheduler().is_idle());
    let from = sim.stats.sent.len();
    sim.run_until_idle();
    let sent: Vec<&Command> = sim.stats.sent[from..].iter().map(|s| &s.command).collect();
    assert_eq!(sent.len(), 1, "one batched request");
    assert!(matches!(sent[0], Command::Status { ids: batch } if batch.len() == 3));
    assert_eq!(sim.record(ids[0]).moderation, ModerationView::Approved);
    assert_eq!(sim.record(ids[1]).moderation, ModerationView::Rejected);
    assert_eq!(sim.record(ids[1]).media.as_ref().unwrap().reason.as_deref(), Some("blurry"));
    assert_eq!(sim.record(ids[2]).moderation, ModerationView::Pending);
    assert_eq!(sim.db[&ids[1]].moderation, ModerationView::Rejected, "the news is stored");
    for id in &ids {
        assert_eq!(sim.record(*id).confirmation, Confirmation::Confirmed);
    }
    // Decided media are not asked about again.
    sim.page_mut().refresh();
    let from = sim.stats.sent.len();
    sim.run_until_idle();
    assert!(matches!(&sim.stats.sent[from].command, Command::Status { ids: batch } if batch == &vec![ids[2]]));
}

#[test]
fn status_answers_are_matched_by_id() {
    let mut s = new_scheduler(4);
    let (mut server, mut rng) = default_server_and_rng(8);
    let mut a = record(1, 10);
    let b = record(2, 10);
    // a was authorized before, b never was.
    let req = upload_once_core::wire::AuthorizeRequest {
        id: a.id,
        filename: a.file.name.clone(),
        size: 10,
        content_type: "image/jpeg".into(),
        sha256: None,
    };
    server.authorize(&req, T0).unwrap();
    a.object_key = server.object_key_of(a.id);
    let (ida, idb) = (a.id, b.id);
    for mut r in [a, b] {
        r.restore(T0);
        insert_stored(&mut s, [r]);
    }
    let batch = status_ids(s.poll(T0));
    let StatusResponse { mut results } = server.status(&batch, T0).unwrap();
    results.reverse();
    s.handle_status(&batch, Ok(StatusResponse { results }), T0, &mut rng);
    assert_eq!(s.record(&ida).unwrap().step, Step::Upload, "authorized, no object: upload");
    assert_eq!(s.record(&idb).unwrap().step, Step::Authorize, "not found: authorize");
}
