//! Without faults, one file goes authorize → PUT → confirm, exactly once.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, ModerationView, Step, Transfer};
use upload_once_core::scheduler::Command;
use upload_once_core::wire::{AttemptState, Moderation};

#[test]
fn one_file_is_authorized_uploaded_and_confirmed_with_one_request_each() {
    let mut sim = Sim::with_seed(7);
    let id = sim.add_file("cake.jpg", 2_000_000, "image/jpeg");
    sim.run_until_idle();

    assert_eq!(
        sim.stats.kinds_for(id),
        vec![ReqKind::Authorize, ReqKind::Upload, ReqKind::Confirm],
        "the happy path needs exactly these requests, in this order"
    );
    let r = sim.record(id);
    assert_eq!(r.step, Step::Done);
    assert_eq!(r.transfer, Transfer::Uploaded);
    assert_eq!(r.confirmation, Confirmation::Confirmed);
    assert_eq!(r.moderation, ModerationView::Pending, "the server's default policy is moderation required");
    assert!(r.error.is_none());
    assert_eq!(r.retries, 0);
    assert!(r.upload.is_none(), "a confirmed attempt forgets its signed URL");

    let key = sim.server.object_key_of(id).expect("authorized");
    assert_eq!(r.object_key.as_deref(), Some(key.as_str()), "the client keeps the server's object key");
    assert_eq!(sim.server.puts_for_key(&key), 1);
    assert_eq!(sim.server.put_requests_for_key(&key), 1);
    assert_eq!(sim.server.media_rows_for_attempt(id), 1);
    assert_eq!(sim.server.state_of(id), Some(AttemptState::Confirmed));
    let media = &sim.server.media[0];
    assert_eq!(r.media.as_ref().map(|m| m.id), Some(media.id), "the client shows the server's media record");
    assert_eq!(
        (media.size, media.content_type.as_str(), media.filename.as_str()),
        (2_000_000, "image/jpeg", "cake.jpg")
    );
    sim.check_exactly_once().unwrap();
}

#[test]
fn the_requests_carry_the_records_id_and_file_parameters() {
    let mut sim = Sim::with_seed(8);
    let id = sim.add_file("clip.mp4", 12_345, "video/mp4");
    sim.run_until_idle();
    let commands = sim.stats.commands_for(id);
    match commands[0] {
        Command::Authorize { id: cid, request } => {
            assert_eq!(*cid, id);
            assert_eq!(request.id, id, "the body id is the client-minted attempt id");
            assert_eq!(
                (request.filename.as_str(), request.size, request.content_type.as_str()),
                ("clip.mp4", 12_345, "video/mp4")
            );
            // The file's SHA-256, computed before the first byte leaves.
            assert_eq!(request.sha256, Some(fake_sha("clip.mp4", 0)));
        }
        other => panic!("first command should authorize, got {other:?}"),
    }
    match commands[1] {
        Command::Upload { instruction, .. } => {
            assert_eq!(instruction.method, "PUT");
            assert_eq!(instruction.headers.get("content-type").map(String::as_str), Some("video/mp4"));
        }
        other => panic!("second command should upload, got {other:?}"),
    }
    match commands[2] {
        Command::Confirm { request, .. } => {
            assert_eq!((request.size, request.content_type.as_str()), (12_345, "video/mp4"));
            assert_eq!(request.sha256, Some(fake_sha("clip.mp4", 0)), "the same hash as authorized");
        }
        other => panic!("third command should confirm, got {other:?}"),
    }
}

#[test]
fn an_event_without_moderation_shows_the_media_as_approved() {
    let mut config = SimConfig::default();
    config.server.moderation = Moderation::Approved;
    let mut sim = Sim::new(config);
    let id = sim.add_jpeg(10);
    sim.run_until_idle();
    assert_eq!(sim.record(id).moderation, ModerationView::Approved);
}

#[test]
fn many_files_each_end_with_exactly_one_media_row() {
    let mut sim = Sim::with_seed(9);
    let ids: Vec<_> = (0..12).map(|i| sim.add_jpeg(1000 + i)).collect();
    sim.run_until_idle();
    assert_eq!(sim.server.media.len(), 12);
    for id in ids {
        assert_eq!(sim.server.media_rows_for_attempt(id), 1);
        assert_eq!(sim.record(id).confirmation, Confirmation::Confirmed);
    }
    assert_eq!(sim.stats.count(ReqKind::Status), 0, "nothing was ambiguous, so nothing was checked");
    sim.check_exactly_once().unwrap();
}
