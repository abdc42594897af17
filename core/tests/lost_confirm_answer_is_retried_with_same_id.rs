//! A confirm (or authorize) that commits on the server but whose answer is
//! lost is repeated with the same attempt id, and the server's
//! create-or-return answers with the same record: one media row, one attempt.

mod support;

use support::*;
use upload_once_core::attempt::Confirmation;
use upload_once_core::scheduler::Command;

fn confirm_ids(sim: &Sim) -> Vec<uuid::Uuid> {
    sim.stats
        .commands()
        .filter_map(|c| match c {
            Command::Confirm { id, .. } => Some(*id),
            _ => None,
        })
        .collect()
}

#[test]
fn a_dropped_confirm_answer_is_retried_and_returns_the_same_media() {
    let mut sim = Sim::with_faults(21, &[(ReqKind::Confirm, Fault::DropAfter)]);
    let id = sim.add_jpeg(500);
    sim.run_until_idle();

    assert_eq!(sim.faults.pending_script(), 0, "the fault was injected");
    assert_eq!(confirm_ids(&sim), vec![id, id], "the confirm is repeated with the same attempt id");
    assert_eq!(sim.server.applied_count(ReqKind::Confirm), 2, "both confirms reached the server");
    assert_eq!(sim.server.media_rows_for_attempt(id), 1, "create-or-return: still one media row");
    let r = sim.record(id);
    assert_eq!(r.confirmation, Confirmation::Confirmed);
    assert_eq!(
        r.media.as_ref().unwrap().id,
        sim.server.media[0].id,
        "the client shows the row made by the first confirm"
    );
    assert_eq!(sim.stats.count(ReqKind::Upload), 1, "confirm is repeated, not the upload");
    assert_eq!(sim.stats.count(ReqKind::Authorize), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn the_repeated_confirm_carries_the_same_body() {
    let mut sim = Sim::with_faults(22, &[(ReqKind::Confirm, Fault::DropAfter)]);
    sim.add_file("v.mp4", 777, "video/mp4");
    sim.run_until_idle();
    let bodies: Vec<_> = sim
        .stats
        .commands()
        .filter_map(|c| match c {
            Command::Confirm { request, .. } => Some(request.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
    assert_eq!((bodies[0].size, bodies[0].content_type.as_str()), (777, "video/mp4"));
}

#[test]
fn a_503_after_the_confirm_committed_is_also_harmless() {
    let mut sim = Sim::with_faults(
        23,
        &[
            (ReqKind::Confirm, Fault::UnavailableAfterCommit),
            (ReqKind::Confirm, Fault::DropAfter),
            (ReqKind::Confirm, Fault::RateLimited { retry_after_ms: Some(2000) }),
        ],
    );
    let id = sim.add_jpeg(500);
    sim.run_until_idle();
    assert_eq!(confirm_ids(&sim), vec![id; 4]);
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(sim.record(id).retries, 0, "success clears the retry count");
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_reload_after_the_lost_confirm_answer_asks_instead_of_confirming_again() {
    let mut sim = Sim::with_faults(24, &[(ReqKind::Confirm, Fault::DropAfter)]);
    let id = sim.add_jpeg_answered(500, ReqKind::Confirm);
    sim.reload(Reload::KEEP_BLOBS);
    let after = sim.kinds_sent_until_idle();
    assert_eq!(after, vec![ReqKind::Status], "the server already says confirmed: nothing else is sent");
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(sim.record(id).media.as_ref().unwrap().id, sim.server.media[0].id);
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_dropped_authorize_answer_is_retried_with_the_same_id_and_makes_one_attempt() {
    let mut sim = Sim::with_faults(
        25,
        &[(ReqKind::Authorize, Fault::DropAfter), (ReqKind::Authorize, Fault::UnavailableAfterCommit)],
    );
    let id = sim.add_file("once.jpg", 42, "image/jpeg");
    sim.run_until_idle();
    assert_eq!(sim.stats.kinds_for(id)[..3], [ReqKind::Authorize; 3]);
    assert_eq!(sim.server.attempts_for_file("once.jpg").len(), 1, "create-or-return: one server attempt");
    assert_eq!(sim.server.attempts_for_file("once.jpg")[0].0, id);
    assert_eq!(sim.server.media_for_file("once.jpg").len(), 1);
    sim.check_exactly_once().unwrap();
}
