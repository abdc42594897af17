//! Cancel stops an attempt for good (until the user retries); retry asks the
//! server before doing anything, and a double click retries once.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Step, Transfer};
use upload_once_core::retry::RetryPolicy;
use upload_once_core::scheduler::Command;

#[test]
fn a_cancelled_attempt_sends_nothing_more() {
    let mut sim = Sim::with_seed(91);
    let id = sim.add_jpeg_answered(100, ReqKind::Authorize);
    let sent = sim.stats.sent.len();
    assert!(sim.cancel(id));
    let r = sim.record(id);
    assert_failed_with(r, "cancelled");
    assert_eq!((r.transfer, r.confirmation), (Transfer::Failed, Confirmation::Unconfirmed));
    sim.run_until_idle();
    assert_eq!(sim.stats.sent.len(), sent, "nothing after cancel");
    assert_eq!(sim.db[&id].error.as_ref().unwrap().code, "cancelled", "the cancel is stored");
}

#[test]
fn cancelling_twice_is_harmless() {
    let (mut sim, id) = Sim::with_jpeg(92, 100);
    assert!(sim.cancel(id));
    let revision = sim.record(id).revision;
    sim.advance(1);
    assert!(sim.cancel(id), "still cancelled");
    assert_eq!(sim.record(id).revision, revision, "no second change");
}

#[test]
fn finished_attempts_cannot_be_cancelled() {
    let (mut sim, id) = Sim::with_jpeg(93, 100);
    sim.run_until_idle();
    let before = sim.record(id).clone();
    assert!(!sim.cancel(id));
    assert!(!sim.retry(id));
    assert_eq!(sim.record(id), &before);
}

#[test]
fn retry_before_authorize_committed_authorizes_with_the_same_id() {
    let (mut sim, id) = Sim::with_jpeg(94, 100);
    assert!(sim.cancel(id));
    sim.persist_all();
    assert!(sim.retry(id));
    let r = sim.record(id);
    assert_eq!((r.step, r.transfer, r.error.clone(), r.retries), (Step::Authorize, Transfer::Queued, None, 0));
    sim.run_until_idle();
    assert_eq!(sim.stats.kinds_for(id), vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm]);
    sim.check_exactly_once().unwrap();
}

#[test]
fn retry_after_authorize_asks_the_server_first() {
    let mut sim = Sim::with_seed(95);
    let id = sim.add_jpeg_answered(100, ReqKind::Authorize);
    assert!(sim.cancel(id));
    // The PUT went out with the authorize's answer (it does not wait for that
    // answer to be written): the guest's retry comes once it was aborted.
    assert_eq!(sim.stats.kinds_for(id), vec![ReqKind::Authorize, ReqKind::Upload]);
    assert!(!sim.retry(id), "nothing to retry while the aborted PUT is still on the wire");
    let mut ticks = 0;
    while !sim.retry(id) {
        assert!(ticks < 100, "the aborted PUT never answered");
        sim.tick();
        ticks += 1;
    }
    assert_eq!(sim.record(id).step, Step::Check);
    let kinds = sim.kinds_sent_until_idle();
    assert_eq!(without_renews(&kinds), vec![ReqKind::Status, ReqKind::Upload, ReqKind::Confirm], "{kinds:?}");
    assert!(renews(&kinds) <= 1);
    assert_eq!(sim.stats.count(ReqKind::Authorize), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_double_retry_retries_once() {
    let (mut sim, id) = Sim::with_jpeg(96, 100);
    assert!(sim.cancel(id));
    assert!(sim.retry(id), "first click");
    let revision = sim.record(id).revision;
    assert!(!sim.retry(id), "second click does nothing");
    assert_eq!(sim.record(id).revision, revision);
    sim.run_until_idle();
    assert_eq!(sim.stats.count(ReqKind::Authorize), 1);
    assert!(!sim.retry(id), "nothing to retry once confirmed");
    sim.check_exactly_once().unwrap();
}

#[test]
fn retrying_an_active_attempt_does_nothing() {
    let mut sim = Sim::with_seed(97);
    let id = sim.add_jpeg_answered(100, ReqKind::Authorize);
    let before = sim.record(id).clone();
    assert!(!sim.retry(id));
    assert_eq!(sim.record(id), &before);
}

#[test]
fn an_attempt_cancelled_in_flight_cannot_be_retried_until_the_answer_is_in() {
    let (mut sim, id) = Sim::with_jpeg(98, 100);
    sim.persist_all();
    assert!(matches!(sim.poll_all().as_slice(), [Command::Authorize { .. }]));
    assert!(sim.cancel(id));
    assert!(!sim.retry(id), "a request is still in flight");
    sim.resolve(0);
    assert_failed_with(sim.record(id), "cancelled");
    assert_eq!(sim.record(id).object_key, None, "the late answer is ignored");
    assert_eq!(sim.scheduler().active(), 0, "but the slot is freed");
    assert!(sim.retry(id));
    sim.run_until_idle();
    assert_eq!(sim.server.attempts.len(), 1, "the late-committed authorize and the retry are one attempt");
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_confirm_that_committed_after_cancel_is_adopted() {
    let mut sim = Sim::with_seed(99);
    let id = sim.add_jpeg_answered_and_persisted(100, ReqKind::Upload);
    assert!(matches!(sim.poll_all().as_slice(), [Command::Confirm { .. }]));
    assert!(sim.cancel(id), "cancel while the confirm is in flight");
    // The bytes are stored: the failure shows on the confirmation axis.
    assert_eq!((sim.record(id).transfer, sim.record(id).confirmation), (Transfer::Uploaded, Confirmation::Failed));
    sim.resolve(0); // the server commits the confirm, and the answer arrives
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    // The media exists, so the cancelled attempt shows confirmed: a later
    // pick of the same file can never make a hidden second record.
    let r = sim.record(id).clone();
    assert_eq!(r.confirmation, Confirmation::Confirmed);
    assert_eq!(r.media.as_ref().unwrap().id, sim.server.media[0].id);
    assert!(!sim.retry(id), "nothing left to retry");
    sim.run_until_idle();
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn retries_exhausted_can_be_retried_by_hand_with_a_fresh_budget() {
    let policy = RetryPolicy { base_ms: 10, cap_ms: 100, max_retries: 2 };
    let mut sim = Sim::new(SimConfig { seed: 100, policy, ..SimConfig::default() });
    for _ in 0..3 {
        sim.faults.script(ReqKind::Authorize, Fault::Unavailable { retry_after_ms: None });
    }
    let id = sim.add_jpeg(100);
    sim.run_until_idle();
    assert_failed_with(sim.record(id), "retries_exhausted");
    assert!(sim.retry(id));
    assert_eq!(sim.record(id).retries, 0);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_failed_moderation_refresh_leaves_a_confirmed_attempt_alone() {
    use upload_once_core::retry::Failure;
    let (mut sim, id) = Sim::with_jpeg(123, 100);
    sim.run_until_idle();
    let before = sim.record(id).clone();
    assert_eq!(before.confirmation, Confirmation::Confirmed);
    for _ in 0..20 {
        sim.page_mut().refresh();
        sim.faults.script(ReqKind::Status, Fault::DropBefore);
        assert!(matches!(sim.poll_all().as_slice(), [Command::Status { .. }]), "a refresh batch");
        let (_, reply) = sim.resolve(0);
        assert!(matches!(reply, Reply::Status(Err(Failure::Network))), "the refresh failed");
    }
    let after = sim.record(id);
    assert_eq!(after.confirmation, Confirmation::Confirmed);
    assert_eq!(after.error, None, "no error from a refresh that failed");
    assert_eq!(after.retries, 0);
    assert!(after.is_terminal());
}
