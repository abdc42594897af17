//! After a reload every unfinished attempt asks the server what became of it
//! and acts on the answer instead of guessing.

mod support;

use support::*;
use upload_once_core::attempt::{Action, Confirmation, Step, Transfer};
use upload_once_core::scheduler::Command;

#[test]
fn restore_turns_every_unfinished_step_into_a_check() {
    for step_reached in [ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm] {
        let mut rec = record(1, 10);
        rec.step = match step_reached {
            ReqKind::Authorize => Step::Authorize,
            ReqKind::Upload => Step::Upload,
            _ => Step::Confirm,
        };
        rec.transfer = Transfer::Uploading;
        rec.confirmation = Confirmation::Confirming;
        let revision = rec.revision;
        rec.restore(T0 + 5);
        assert_eq!(rec.step, Step::Check);
        assert_eq!(rec.transfer, Transfer::Queued, "an upload that was running is not running any more");
        assert_eq!(rec.confirmation, Confirmation::Unconfirmed);
        assert_eq!((rec.revision, rec.updated_at), (revision + 1, T0 + 5));
        assert_eq!(rec.poll_action(T0 + 5, true), Action::Check);
    }
}

#[test]
fn restore_leaves_terminal_attempts_alone() {
    let mut rec = record(2, 10);
    assert!(rec.cancel(T0));
    let before = rec.clone();
    rec.restore(T0 + 99);
    assert_eq!(rec, before);
}

#[test]
fn confirmed_on_the_server_means_no_upload_and_no_confirm() {
    let mut sim = Sim::with_faults(51, &[(ReqKind::Confirm, Fault::DropAfter)]);
    let id = sim.add_jpeg_answered(100, ReqKind::Confirm);
    sim.reload(Reload::KEEP_BLOBS);
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status]);
    let r = sim.record(id);
    assert_eq!((r.confirmation, r.transfer, r.step), (Confirmation::Confirmed, Transfer::Uploaded, Step::Done));
    assert_eq!(r.media.as_ref().map(|m| m.id), Some(sim.server.media[0].id));
    sim.check_exactly_once().unwrap();
}

#[test]
fn authorized_with_the_object_stored_means_confirm_only() {
    let mut sim = Sim::with_faults(52, &[(ReqKind::Upload, Fault::DropAfter)]);
    let id = sim.add_jpeg_answered(100, ReqKind::Upload);
    sim.reload(Reload::KEEP_BLOBS);
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status, ReqKind::Confirm]);
    assert_eq!(sim.server.puts_for_key(&sim.server.object_key_of(id).unwrap()), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn authorized_without_the_object_uploads_when_the_bytes_are_held() {
    let mut sim = Sim::with_seed(53);
    // The signed URL is in IndexedDB.
    sim.add_jpeg_answered_and_persisted(100, ReqKind::Authorize);
    sim.reload(Reload::KEEP_BLOBS);
    let kinds = sim.kinds_sent_until_idle();
    assert_eq!(without_renews(&kinds), vec![ReqKind::Status, ReqKind::Upload, ReqKind::Confirm], "{kinds:?}");
    assert!(renews(&kinds) <= 1, "at most a fresh URL before the PUT: {kinds:?}");
    assert_eq!(sim.stats.count(ReqKind::Authorize), 1, "the attempt is not authorized twice");
    sim.check_exactly_once().unwrap();
}

#[test]
fn authorized_without_the_object_needs_the_file_when_the_bytes_are_gone() {
    let mut sim = Sim::with_seed(54);
    let id = sim.add_jpeg_answered(100, ReqKind::Authorize);
    sim.reload(Reload::LOSE_BLOBS);
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status], "nothing to upload");
    let r = sim.record(id);
    assert_eq!(r.transfer, Transfer::NeedsFile);
    assert_eq!(r.error.as_ref().unwrap().code, "needs_file");
    assert!(!r.is_terminal(), "it waits for the guest, it has not failed");
    assert!(sim.scheduler().is_idle());
    assert!(sim.server.media.is_empty());
}

#[test]
fn expired_on_the_server_is_terminal_with_its_reason() {
    let mut sim = Sim::with_seed(55);
    let id = sim.add_jpeg_answered(100, ReqKind::Authorize);
    sim.advance(sim.config.server.attempt_ttl_ms + 1);
    sim.reload(Reload::LOSE_BLOBS);
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status]);
    let r = sim.record(id);
    assert_eq!((r.confirmation, r.step), (Confirmation::Expired, Step::Done));
    assert_eq!(r.error.as_ref().unwrap().code, "expired");
    assert_eq!(r.replaced_by, None, "without the bytes there is nothing to continue with");
    assert_eq!(sim.scheduler().records().count(), 1);
}

#[test]
fn rejected_on_the_server_is_terminal_with_the_servers_code_and_reason() {
    let mut sim = Sim::with_faults(56, &[(ReqKind::Confirm, Fault::DropAfter)]);
    let id = sim.add_jpeg_answered(100, ReqKind::Upload);
    // The stored object is not what was authorized (a tampered or broken store).
    let key = sim.server.object_key_of(id).unwrap();
    sim.server.plant_object(&key, 99, "image/jpeg");
    sim.tick_until_answered(id, ReqKind::Confirm);
    assert_eq!(sim.server.state_of(id), Some(upload_once_core::wire::AttemptState::Rejected));
    sim.reload(Reload::KEEP_BLOBS);
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status]);
    let r = sim.record(id);
    assert_eq!((r.confirmation, r.step), (Confirmation::Rejected, Step::Done));
    let error = r.error.as_ref().unwrap();
    assert_eq!(error.code, "size_mismatch");
    assert_eq!(error.message, "the stored object is 99 bytes but 100 were authorized", "the server's own reason");
    assert!(!sim.retry(id), "a rejected attempt cannot be retried into a second confirm");
    assert!(sim.server.media.is_empty());
}

#[test]
fn unknown_to_the_server_before_authorize_committed_authorizes_again_with_the_same_id() {
    let (mut sim, id) = Sim::with_jpeg(57, 100);
    sim.persist_all();
    assert!(matches!(sim.poll_all().as_slice(), [Command::Authorize { .. }]));
    sim.reload(Reload { lose_blob: 0.0, inflight_reached_server: 0.0 });
    let from = sim.stats.sent.len();
    let kinds = sim.kinds_sent_until_idle();
    assert_eq!(
        without_renews(&kinds),
        vec![ReqKind::Status, ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm],
        "{kinds:?}"
    );
    assert_eq!(renews(&kinds), 0, "the authorize answer brings a fresh URL");
    match &sim.stats.sent[from + 1].command {
        Command::Authorize { id: cid, request } => {
            assert_eq!((*cid, request.id), (id, id), "the same id, minted once")
        }
        other => panic!("{other:?}"),
    }
    sim.check_exactly_once().unwrap();
}

#[test]
fn an_authorize_that_did_commit_before_the_reload_is_not_repeated() {
    let (mut sim, id) = Sim::with_jpeg(58, 100);
    sim.persist_all();
    sim.poll_all();
    sim.reload(Reload { lose_blob: 0.0, inflight_reached_server: 1.0 });
    // Status says authorized without an object; this page never learned a
    // URL, so it renews one (not a second authorize) and uploads.
    let kinds = sim.kinds_sent_until_idle();
    assert_eq!(kinds, vec![ReqKind::Status, ReqKind::Renew, ReqKind::Upload, ReqKind::Confirm]);
    assert!(sim.record(id).object_key.is_some());
    sim.check_exactly_once().unwrap();
}

#[test]
fn unknown_to_the_server_after_authorize_fails_as_not_found() {
    // An object key means the server knew the attempt: "not found" now means
    // another session (or lost server data), not "authorize again".
    let mut sim = Sim::with_seed(59);
    // The object key is in IndexedDB.
    let id = sim.add_jpeg_answered_and_persisted(100, ReqKind::Authorize);
    sim.server.attempts.clear();
    sim.reload(Reload::KEEP_BLOBS);
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status]);
    let r = sim.record(id);
    assert_failed_with(r, "not_found");
    assert_eq!(r.transfer, Transfer::Failed);
}

#[test]
fn finished_attempts_are_not_checked_again_after_a_reload() {
    let (mut sim, id) = Sim::with_jpeg(60, 100);
    sim.run_until_idle();
    sim.reload(Reload::KEEP_BLOBS);
    // A restore refreshes moderation (the host may have decided meanwhile):
    // one status request, nothing that could store the photo again.
    assert_eq!(sim.kinds_sent_until_idle(), vec![ReqKind::Status], "only the moderation refresh");
    assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed, "the stored record is the confirmed one");
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
}

#[test]
fn restore_starts_a_fresh_retry_budget_and_asks_the_server_first() {
    use upload_once_core::attempt::{AttemptRecord, FileInfo, Step};
    let file = FileInfo { name: "a.jpg".into(), size: 10, content_type: "image/jpeg".into(), last_modified: 1 };
    let mut r = AttemptRecord::new(uuid::Uuid::from_bytes([7; 16]), "e", file, 1_000);
    r.step = Step::Upload;
    r.retries = 7;
    r.next_retry_at = Some(90_000);
    let revision = r.revision;
    r.restore(2_000);
    assert_eq!(r.step, Step::Check, "the server is asked first");
    assert_eq!(r.retries, 0, "a reload is a new page visit: a new retry budget");
    assert_eq!(r.next_retry_at, None, "the old page's backoff does not bind");
    assert!(r.revision > revision, "the change is stored before the check goes out");
}
