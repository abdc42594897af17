//! An attempt the server expired while its bytes are still held continues as
//! a new attempt (new id, same file and bytes), linked both ways; the file
//! still ends up stored exactly once.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Env, Followup, Step};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::wire::AttemptState;

fn short_ttl_sim(seed: u64) -> Sim {
    let mut config = SimConfig { seed, ..SimConfig::default() };
    config.server.attempt_ttl_ms = 10 * MINUTE;
    Sim::new(config)
}

#[test]
fn expiry_before_upload_creates_a_linked_successor_that_is_confirmed() {
    let mut sim = short_ttl_sim(81);
    let first = sim.add_file("late.jpg", 100, "image/jpeg");
    sim.tick_until_answered(first, ReqKind::Authorize);
    sim.advance(11 * MINUTE); // the tab slept past the attempt TTL
    sim.run_until_idle();

    let old = sim.record(first).clone();
    assert_eq!((old.confirmation, old.step), (Confirmation::Expired, Step::Done));
    let next = old.replaced_by.expect("a successor was started");
    assert_ne!(next, first, "a new id: the expired one can never be confirmed");
    let new = sim.record(next);
    assert_eq!(new.replaces, Some(first));
    assert_eq!(new.blob_key, first, "the successor uses the same stored bytes");
    assert_eq!(new.file, old.file);
    assert_eq!(new.confirmation, Confirmation::Confirmed);
    assert_eq!(sim.stats.kinds_for(next), vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm]);

    assert_eq!(sim.server.state_of(first), Some(AttemptState::Expired));
    assert_eq!(sim.server.media_rows_for_attempt(first), 0);
    assert_eq!(sim.server.media_for_file("late.jpg").len(), 1);
    assert_eq!(sim.server.media[0].attempt_id, next);
    sim.check_exactly_once().unwrap();
}

#[test]
fn expiry_discovered_at_confirm_uploads_again_under_the_successor() {
    let mut sim = short_ttl_sim(82);
    // Confirm is rate limited for longer than the attempt has left.
    sim.faults.script(ReqKind::Confirm, Fault::RateLimited { retry_after_ms: Some(15 * MINUTE as u64) });
    let first = sim.add_file("slow.jpg", 100, "image/jpeg");
    sim.run_until_idle();

    let next = sim.record(first).replaced_by.expect("successor");
    assert_eq!(
        sim.stats.kinds_for(first),
        vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm, ReqKind::Confirm]
    );
    assert_eq!(sim.record(first).error.as_ref().unwrap().code, "expired");
    // The expired attempt's object was deleted, so the bytes go up again.
    let old_key = sim.server.object_key_of(first).unwrap();
    let new_key = sim.server.object_key_of(next).unwrap();
    assert_ne!(old_key, new_key);
    assert_eq!((sim.server.puts_for_key(&old_key), sim.server.puts_for_key(&new_key)), (1, 1));
    assert_eq!(sim.server.media_for_file("slow.jpg").len(), 1);
    sim.check_exactly_once().unwrap();
}

#[test]
fn without_the_bytes_an_expired_attempt_has_no_successor() {
    let policy = RetryPolicy::default();
    let mut rec = record(1, 10);
    rec.step = Step::Confirm;
    let env = Env { now: T0, jitter: 0.5, policy: &policy, has_blob: false, online: true };
    let effect = rec.handle_confirm(Err(Failure::http(410, Some("expired"), "gone")), &env);
    assert_eq!(effect, Followup::None);
    assert_eq!(rec.confirmation, Confirmation::Expired);

    let mut rec = record(2, 10);
    rec.step = Step::Confirm;
    let env = Env { has_blob: true, ..env };
    let effect = rec.handle_confirm(Err(Failure::http(410, Some("expired"), "gone")), &env);
    assert_eq!(effect, Followup::Successor, "with the bytes, the caller starts a successor");
}

#[test]
fn the_successor_record_copies_the_file_and_checksum_but_nothing_server_side() {
    let mut old = record(3, 10);
    old.sha256 = Some("ab".repeat(32));
    old.object_key = Some("uploads/x".into());
    old.expires_at = Some("2026-11-30T05:00:00.000Z".into());
    let next = old.successor(uuid::Uuid::from_u128(4), T0 + 7);
    assert_eq!((next.id, next.replaces, next.blob_key), (uuid::Uuid::from_u128(4), Some(old.id), old.blob_key));
    assert_eq!(
        (next.file.clone(), next.sha256.clone(), next.event.clone()),
        (old.file.clone(), old.sha256.clone(), old.event.clone())
    );
    assert_eq!((next.object_key, next.expires_at, next.upload), (None, None, None));
    assert_eq!((next.step, next.created_at, next.revision), (Step::Authorize, T0 + 7, 1));
}

#[test]
fn a_successor_is_stored_before_it_sends_anything_and_survives_a_reload() {
    let mut sim = short_ttl_sim(83);
    let first = sim.add_jpeg_answered(100, ReqKind::Authorize);
    sim.advance(11 * MINUTE);
    sim.tick_until(|s| s.scheduler().record(&first).is_some_and(|r| r.replaced_by.is_some()));
    let next = sim.record(first).replaced_by.unwrap();
    assert!(!sim.scheduler().is_persisted(&next), "a new successor is not stored yet");
    assert!(sim.poll_all().is_empty(), "so it may not send anything yet");
    sim.persist_all();
    assert_eq!(sim.db[&first].replaced_by, Some(next), "the link is stored with the expired attempt");
    assert_eq!(sim.db[&next].replaces, Some(first));
    sim.reload(Reload::KEEP_BLOBS);
    sim.run_until_idle();
    assert_eq!(sim.chain(first).len(), 2, "the reload does not start a third attempt");
    assert_eq!(sim.record(next).confirmation, Confirmation::Confirmed);
    sim.check_exactly_once().unwrap();
}

#[test]
fn a_successor_lost_before_it_was_stored_is_started_again_exactly_once() {
    let mut sim = short_ttl_sim(84);
    let first = sim.add_jpeg_answered_and_persisted(100, ReqKind::Authorize);
    sim.advance(11 * MINUTE);
    sim.tick_until(|s| s.scheduler().record(&first).is_some_and(|r| r.replaced_by.is_some()));
    let lost = sim.record(first).replaced_by.unwrap();
    // The page dies before the IndexedDB transaction with the expiry and the
    // successor commits.
    sim.reload(Reload::KEEP_BLOBS);
    assert!(sim.scheduler().record(&lost).is_none());
    sim.run_until_idle();

    assert!(sim.stats.commands_for(lost).is_empty(), "nothing was ever sent for the unstored successor");
    let next = sim.record(first).replaced_by.expect("the restored check expires it again");
    assert_ne!(next, lost);
    assert_eq!(sim.chain(first).len(), 2, "exactly one successor after the reload");
    assert_eq!(sim.record(next).confirmation, Confirmation::Confirmed);
    sim.check_exactly_once().unwrap();
}
