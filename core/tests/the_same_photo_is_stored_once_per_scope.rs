//! The content identity beside the attempt id: the client hashes a file that
//! goes up in one PUT before its first authorize, and the server keeps an
//! index of what is stored per event. A photo already confirmed in the
//! event's dedup scope is not sent again (confirmed at authorize, pointing to
//! that media); a large file whose composite is only known at confirm leaves
//! no second object; a different photo is never merged; bytes that changed
//! after the pick are refused.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, Transfer};
use upload_once_core::page::Added;
use uuid::Uuid;

fn sim(dedup: Dedup, seed: u64) -> Sim {
    let mut config = SimConfig { seed, ..SimConfig::default() };
    config.server.dedup = dedup;
    // Every join opens a new session (a guest on another device, or after
    // clearing the site's data, is another session).
    config.server.session_ttl_ms = Some(30 * 24 * HOUR);
    Sim::new(config)
}

fn photo(name: &str, size: u64) -> upload_once_core::attempt::FileInfo {
    upload_once_core::attempt::FileInfo {
        name: name.to_owned(),
        size,
        content_type: "image/jpeg".to_owned(),
        last_modified: T0 - HOUR,
    }
}

/// The guest picks `name` whose bytes are `content`: the new attempt's id.
fn pick(sim: &mut Sim, name: &str, size: u64, content: &str) -> Uuid {
    let plan = sim.add_files_with(&[photo(name, size)], &[content.to_owned()]);
    match plan.outcomes.as_slice() {
        [Added::New(id)] => *id,
        other => panic!("a new attempt, got {other:?}"),
    }
}

fn sent_bytes(sim: &Sim, id: Uuid) -> bool {
    sim.stats.kinds_for(id).iter().any(|k| matches!(k, ReqKind::Upload | ReqKind::UploadPart))
}

#[test]
fn in_event_scope_the_same_photo_from_another_device_is_not_sent_again() {
    let mut sim = sim(Dedup::Event, 1);
    let first = pick(&mut sim, "IMG_0001.jpg", 20_000, "the cake");
    sim.run_until_idle();
    let media = sim.record(first).media.clone().expect("confirmed");
    assert!(!media.duplicate);
    // On the wall: another device's claim of it may be told "already
    // shared" (one of a photo still waiting for the host goes up, and is
    // kept once at confirm).
    sim.server.moderate(media.id, upload_once_core::wire::ModerationDecision::Approve, None, sim.now);

    sim.clear_site_data();
    let again = pick(&mut sim, "IMG_0001.jpg", 20_000, "the cake");
    sim.run_until_idle();

    let r = sim.record(again);
    assert_eq!((r.transfer, r.confirmation), (Transfer::Uploaded, Confirmation::Confirmed));
    assert!(r.is_duplicate());
    assert_eq!(r.media.as_ref().map(|m| m.id), Some(media.id), "pointing to the existing media");
    assert_eq!(sim.page().view(&again).unwrap().duplicate_of, Some(media.id));
    assert!(!sent_bytes(&sim, again), "no byte sent: {:?}", sim.stats.kinds_for(again));
    assert_eq!(sim.stats.kinds_for(again), vec![ReqKind::Authorize]);
    assert_eq!((sim.server.media.len(), sim.server.objects.len(), sim.server.deduplicated), (1, 1, 1));
}

#[test]
fn in_guest_scope_only_the_same_session_shares() {
    let mut sim = sim(Dedup::Guest, 2);
    let first = pick(&mut sim, "IMG_0001.jpg", 20_000, "the cake");
    // The same bytes under another name (a copy), in the same session.
    let copy = pick(&mut sim, "IMG_0001 (1).jpg", 20_000, "the cake");
    sim.run_until_idle();
    let (a, b) = (sim.record(first).clone(), sim.record(copy).clone());
    assert_eq!(a.confirmation, Confirmation::Confirmed);
    assert_eq!(b.confirmation, Confirmation::Confirmed);
    assert_eq!(a.media.as_ref().unwrap().id, b.media.as_ref().unwrap().id, "one media in one session");
    assert_eq!(sim.server.media.len(), 1);

    // Another session (another device): its own media.
    sim.clear_site_data();
    let elsewhere = pick(&mut sim, "IMG_0001.jpg", 20_000, "the cake");
    sim.run_until_idle();
    let r = sim.record(elsewhere);
    assert_eq!(r.confirmation, Confirmation::Confirmed);
    assert!(!r.is_duplicate());
    assert!(sent_bytes(&sim, elsewhere));
    assert_eq!(sim.server.media.len(), 2);
}

#[test]
fn with_dedup_off_every_upload_is_kept() {
    let mut sim = sim(Dedup::None, 3);
    pick(&mut sim, "IMG_0001.jpg", 20_000, "the cake");
    pick(&mut sim, "IMG_0001 (1).jpg", 20_000, "the cake");
    sim.run_until_idle();
    assert_eq!(sim.server.media.len(), 2);
    assert_eq!(sim.server.deduplicated, 0);
}

#[test]
fn a_different_photo_with_the_same_name_size_and_time_is_never_merged() {
    let mut sim = sim(Dedup::Event, 4);
    let first = pick(&mut sim, "IMG_0001.jpg", 20_000, "the cake");
    sim.run_until_idle();
    let first_media = sim.record(first).media.clone().unwrap().id;
    sim.clear_site_data();
    let other = pick(&mut sim, "IMG_0001.jpg", 20_000, "the dance floor");
    sim.run_until_idle();
    assert!(!sim.record(other).is_duplicate());
    assert_ne!(first_media, sim.record(other).media.as_ref().unwrap().id);
    assert_eq!(sim.server.media.len(), 2);
}

#[test]
fn bytes_changed_after_the_pick_are_refused_with_their_code_and_nothing_is_kept() {
    let mut sim = sim(Dedup::Event, 5);
    let id = pick(&mut sim, "IMG_0001.jpg", 20_000, "the cake");
    sim.tick_until_answered(id, ReqKind::Authorize);
    assert!(sim.record(id).sha256.is_some(), "hashed before authorize");
    // The photo is edited on disk before its bytes are sent.
    let key = sim.record(id).blob_key;
    sim.files.iter_mut().find(|f| f.blob_key == key).unwrap().content = "the cake, cropped".to_owned();
    sim.run_until_idle();

    let r = sim.record(id);
    assert!(r.has_failed() && r.transfer == Transfer::Failed, "{r:?}");
    assert_eq!(r.error.as_ref().map(|e| e.code.as_str()), Some("checksum_mismatch"));
    assert!(sim.server.objects.is_empty(), "nothing half-stored");
    assert!(sim.server.media.is_empty());
}

#[test]
fn a_large_duplicate_found_at_confirm_leaves_no_second_object() {
    let mut sim = sim(Dedup::Event, 6);
    sim.config.server.multipart_threshold = 20;
    sim.server.config.multipart_threshold = 20;
    sim.server.config.part_size = 5;
    sim.clear_site_data(); // a page that knows the threshold
    let first = pick(&mut sim, "clip.mp4", 48, "the speech");
    sim.run_until_idle();
    assert!(sim.record(first).multipart.is_some(), "it went up in parts");
    assert_eq!(sim.stats.file_hashes, 0, "parts are hashed, not the whole file");
    let first_media = sim.record(first).media.clone().unwrap().id;

    sim.clear_site_data();
    let again = pick(&mut sim, "clip.mp4", 48, "the speech");
    sim.run_until_idle();
    let r = sim.record(again);
    assert_eq!(r.confirmation, Confirmation::Confirmed);
    assert!(r.is_duplicate(), "the composite matched at confirm");
    assert_eq!(r.media.as_ref().unwrap().id, first_media);
    assert_eq!(sim.server.media.len(), 1);
    assert_eq!(sim.server.objects.len(), 1, "the second object is gone");
}
