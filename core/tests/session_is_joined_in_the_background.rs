//! On a first visit the page does not wait for the guest session before it
//! is usable: it joins in the background, files can be added meanwhile (ids
//! are minted locally), and their requests wait for the session. A guest
//! code the server refuses is an error the page reports, and each attempt
//! that waited shows it; a join that goes unanswered is simply tried again.

mod support;

use support::*;
use upload_once_core::attempt::Confirmation;
use upload_once_core::error::ErrorCode;
use upload_once_core::page::Added;
use upload_once_core::retry::Failure;

#[test]
fn files_added_before_the_join_answers_wait_for_it_then_upload() {
    let mut sim = Sim::first_visit(SimConfig::default());
    assert!(sim.page().session().is_none(), "nothing was joined before the page was usable");
    let id = sim.add_jpeg(100);
    // The join is one effect; the files' requests waited for its answer.
    sim.run_until_idle();
    assert_eq!(sim.stats.joins, 1, "one join, in the background");
    assert_eq!(sim.stats.session_changes, 1, "the page said when the session arrived");
    assert_eq!(sim.page().session().unwrap().event.slug, EVENT);
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(sim.stats.kinds_for(id), vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm]);
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_file_picked_before_the_join_answers_is_hashed_meanwhile() {
    let mut sim = Sim::first_visit(SimConfig::default());
    sim.hold_join = true;
    let id = sim.add_jpeg(100);
    sim.pump();
    assert_eq!(sim.stats.joins, 1, "the join is under way");
    assert!(sim.page().session().is_none());
    assert_eq!(sim.stats.file_hashes, 1, "the file was hashed without waiting for the session");
    assert!(sim.record(id).sha256.is_some(), "its content hash is in its record");
    assert!(sim.stats.sent.is_empty(), "no request went without a session");
    sim.answer_join();
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    assert_eq!(sim.stats.file_hashes, 1, "hashed once");
    let authorize = sim.stats.sent.iter().find_map(|s| match &s.command {
        upload_once_core::scheduler::Command::Authorize { request, .. } => Some(request.clone()),
        _ => None,
    });
    assert_eq!(authorize.and_then(|r| r.sha256), sim.record(id).sha256, "the authorize carried it");
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_refused_guest_code_is_reported_and_files_picked_later_are_refused_with_it() {
    let mut sim = Sim::first_visit(SimConfig::default());
    sim.join_failure = Some(problem(403, ErrorCode::WrongGuestCode, "this guest code does not open this event"));
    sim.pump();
    let error = sim.page().session_error().cloned().expect("the page reports the refusal");
    assert_eq!(error.code, ErrorCode::WrongGuestCode);
    assert_eq!(sim.stats.session_changes, 1);

    // A file picked now is refused with the same reason, and nothing is
    // recorded or sent.
    let plan = sim.add_files(&[jpeg("late.jpg", 100)]);
    assert!(matches!(&plan.outcomes[..], [Added::Refused { error, .. }] if error.code == ErrorCode::WrongGuestCode));
    assert!(plan.new_records.is_empty());
    sim.run_until_idle();
    assert!(sim.db.is_empty() && sim.stats.sent.is_empty());
}

#[test]
fn attempts_that_waited_for_a_refused_join_show_the_refusal() {
    let mut sim = Sim::first_visit(SimConfig::default());
    sim.join_failure = Some(problem(403, ErrorCode::WrongGuestCode, "this guest code does not open this event"));
    // Picked before the join was answered: recorded, then refused.
    let id = sim.add_jpeg(100);
    sim.run_until_idle();
    assert_failed_with(sim.record(id), "wrong_guest_code");
    assert_eq!(sim.stats.count(ReqKind::Authorize), 0, "nothing was authorized without a session");
    assert!(sim.server.attempts.is_empty());
}

#[test]
fn an_unanswered_join_is_tried_again_when_a_request_needs_it() {
    let mut sim = Sim::first_visit(SimConfig::default());
    sim.join_failure = Some(Failure::Network);
    sim.pump();
    assert!(sim.page().session_error().is_none(), "no answer is not a refusal");
    assert_eq!(sim.stats.session_changes, 0);
    let id = sim.add_jpeg(100);
    sim.pump();
    let joins = sim.stats.joins;
    assert!(joins >= 2, "the attempt asked for the session");
    sim.join_failure = None;
    sim.run_until_idle();
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed, "it went on once the join was answered");
    sim.check_exactly_once().unwrap();
}
