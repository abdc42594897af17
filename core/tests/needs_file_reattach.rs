//! When the bytes are gone the attempt waits for the guest (`needs_file`)
//! instead of failing, and continues with the same id once the file is
//! picked again.

mod support;

use support::*;
use upload_once_core::attempt::{Action, Confirmation, Step, Transfer};
use upload_once_core::page::Added;

/// Authorized, then the page reloads and the bytes are gone; returns where
/// the requests after the reload start in `stats.sent`.
fn lose_bytes_after_authorize(seed: u64) -> (Sim, uuid::Uuid, usize) {
    let mut sim = Sim::with_seed(seed);
    let id = sim.add_jpeg_answered_and_persisted(100, ReqKind::Authorize);
    sim.reload(Reload::LOSE_BLOBS);
    let from = sim.stats.sent.len();
    sim.run_until_idle();
    (sim, id, from)
}

#[test]
fn an_upload_without_bytes_waits_for_the_guest() {
    let (sim, id, from) = lose_bytes_after_authorize(61);
    let r = sim.record(id);
    assert_eq!(r.transfer, Transfer::NeedsFile);
    assert_eq!(r.step, Step::Upload, "the step is kept for when the file is back");
    assert_eq!(r.error.as_ref().unwrap().code, "needs_file");
    assert_eq!(r.next_retry_at, None, "no timer: only the guest can help");
    assert!(sim.scheduler().is_idle());
    assert_eq!(sim.scheduler().next_wakeup(), None);
    assert!(!sim.stats.kinds_since(from).contains(&ReqKind::Upload), "no PUT without the bytes");
    assert_eq!(sim.db[&id].transfer, Transfer::NeedsFile, "the wait is stored, so it survives another reload");
}

#[test]
fn picking_the_file_again_continues_the_same_attempt() {
    let (mut sim, id, _) = lose_bytes_after_authorize(62);
    let blob_key = sim.record(id).blob_key;
    let from = sim.stats.sent.len();
    assert_eq!(sim.reattach(blob_key), Added::Reattached(id));
    let r = sim.record(id);
    assert_eq!((r.transfer, r.error.clone(), r.retries), (Transfer::Queued, None, 0));
    sim.run_until_idle();
    let after = sim.stats.kinds_since(from);
    assert_eq!(
        without_renews(&after),
        vec![ReqKind::Upload, ReqKind::Confirm],
        "no second authorize, no new id: {after:?}"
    );
    assert!(renews(&after) <= 1);
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(sim.server.attempts.len(), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn bytes_that_come_back_by_themselves_are_attached_on_the_next_poll() {
    let (mut sim, id, _) = lose_bytes_after_authorize(63);
    // e.g. the kept copy is readable again at the next visit: the page only
    // learns that the bytes are there.
    let blob_key = sim.record(id).blob_key;
    sim.kept.insert(blob_key);
    sim.reload(Reload::KEEP_BLOBS);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    sim.check_exactly_once().unwrap();
}

#[test]
fn attaching_to_an_attempt_that_does_not_need_its_file_changes_nothing() {
    let (mut sim, id) = Sim::with_jpeg(64, 100);
    let revision = sim.record(id).revision;
    let blob_key = sim.record(id).blob_key;
    assert_eq!(sim.reattach(blob_key), Added::Duplicate(id), "picked again while it uploads");
    assert_eq!(sim.record(id).revision, revision);
    let mut scheduler = new_scheduler(1);
    assert!(!scheduler.attach_file(&uuid::Uuid::from_u128(404), sim.now), "unknown id");
}

#[test]
fn the_state_machine_switches_to_needs_file_only_at_the_upload_step() {
    let mut rec = record(1, 10);
    assert!(matches!(rec.poll_action(T0, false), Action::Authorize(_)), "authorize needs no bytes");
    rec.step = Step::Confirm;
    assert!(matches!(rec.poll_action(T0, false), Action::Confirm(_)), "confirm needs no bytes");
    rec.step = Step::Upload;
    let revision = rec.revision;
    assert_eq!(rec.poll_action(T0, false), Action::Idle);
    assert_eq!(rec.transfer, Transfer::NeedsFile);
    assert_eq!(rec.revision, revision + 1, "a durable change");
    assert_eq!(rec.poll_action(T0 + 1, false), Action::Idle);
    assert_eq!(rec.revision, revision + 1, "waiting again is not another change");
    assert!(rec.needs_file() && !rec.is_terminal());
}

#[test]
fn a_needs_file_attempt_can_be_cancelled() {
    let (mut sim, id, _) = lose_bytes_after_authorize(65);
    assert!(sim.cancel(id));
    let r = sim.record(id);
    assert_failed_with(r, "cancelled");
    assert!(!r.needs_file(), "a cancelled attempt no longer asks for its file");
}
