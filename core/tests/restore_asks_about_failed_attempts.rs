//! An attempt that failed here may have been finished on the server anyway
//! (its retries ran out while confirms were committing; it was cancelled
//! with a confirm on the wire). A restore, and `refresh()`, ask the server
//! about such attempts too and show what it says; one the server did not
//! finish stays failed, and Retry goes on with the same id.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Transfer};
use upload_once_core::retry::RetryPolicy;

/// Confirms that commit on the server but whose answers are lost, until the
/// attempt gives up.
fn confirm_given_up_after_committing(seed: u64) -> (Sim, uuid::Uuid) {
    let policy = RetryPolicy { base_ms: 10, cap_ms: 100, max_retries: 2 };
    let mut sim = Sim::new(SimConfig { seed, policy, ..SimConfig::default() });
    for _ in 0..3 {
        sim.faults.script(ReqKind::Confirm, Fault::DropAfter);
    }
    let id = sim.add_jpeg(100);
    sim.run_until_idle();
    (sim, id)
}

#[test]
fn a_restore_shows_the_media_of_an_attempt_that_gave_up_here() {
    let (mut sim, id) = confirm_given_up_after_committing(301);
    let r = sim.record(id);
    assert_failed_with(r, "retries_exhausted");
    assert_eq!(
        (r.transfer, r.confirmation),
        (Transfer::Uploaded, Confirmation::Failed),
        "the failure is the confirmation's"
    );
    assert_eq!(sim.server.media_rows_for_attempt(id), 1, "the server did confirm it");

    sim.reload(Reload::KEEP_BLOBS);
    let from = sim.stats.sent.len();
    sim.run_until_idle();
    let r = sim.record(id);
    assert_eq!(r.confirmation, Confirmation::Confirmed, "the restore asked, and shows the truth");
    assert_eq!(r.media.as_ref().unwrap().id, sim.server.media[0].id);
    assert_eq!(sim.stats.kinds_since(from), vec![ReqKind::Status], "one question, nothing sent again");
    sim.check_exactly_once().unwrap();
}

#[test]
fn refresh_asks_about_failed_attempts_too() {
    let (mut sim, id) = confirm_given_up_after_committing(302);
    assert_eq!(sim.record(id).confirmation, Confirmation::Failed);
    sim.page_mut().refresh();
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
}

#[test]
fn an_attempt_the_server_did_not_finish_stays_failed_and_can_be_retried() {
    let policy = RetryPolicy { base_ms: 10, cap_ms: 100, max_retries: 2 };
    let mut sim = Sim::new(SimConfig { seed: 303, policy, ..SimConfig::default() });
    for _ in 0..3 {
        sim.faults.script(ReqKind::Confirm, Fault::Unavailable { retry_after_ms: None });
    }
    let id = sim.add_jpeg(100);
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Failed);
    sim.reload(Reload::KEEP_BLOBS);
    sim.run_until_idle();
    assert_eq!(
        sim.record(id).confirmation,
        Confirmation::Failed,
        "the server says it is still open: failed here, for the guest to retry"
    );
    assert!(sim.stats.count(ReqKind::Status) >= 1, "it was asked about");
    assert!(sim.retry(id));
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed, "same id, saved");
    sim.check_exactly_once().unwrap();
}
