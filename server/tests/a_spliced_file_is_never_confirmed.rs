//! A file in parts is confirmed only as the client's own file: confirm
//! compares the composite checksum the client computed from every part of
//! the file it holds with the composite of the parts the store holds. Parts
//! of two files (one stored before a reload, the rest sent from another file
//! picked again with the same name, size and time) are refused with
//! `422 file_changed`, the attempt rejected, its upload aborted, and nothing
//! assembled or recorded; a client that skipped its own check still cannot
//! make a mixed object.

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use support::multipart::{FILE, PART, VIDEO, composite, file, plan};
use support::{TestServer, problem};
use upload_once_core::wire::Media;
use uuid::Uuid;

/// `original` with other bytes in part 2 only.
fn with_other_part_two(original: &[u8]) -> Vec<u8> {
    let mut other = original.to_vec();
    for b in &mut other[PART as usize..(2 * PART) as usize] {
        *b = b.wrapping_add(1);
    }
    other
}

#[tokio::test]
async fn parts_of_two_files_are_refused_with_file_changed_and_nothing_is_left_behind() {
    let server = TestServer::start_with(support::multipart::options()).await;
    let guest = server.big_guest().await;
    let original = file(FILE, 61);
    let picked_again = with_other_part_two(&original);
    let id = Uuid::new_v4();
    let authorized = guest.authorize_video(id, FILE).await;
    let plan = plan(&authorized);
    // Parts 1 and 2 of the first file (stored before a reload), part 3 of
    // the other (sent after it was picked again).
    guest.send_parts(id, &original, &plan, &[1, 2]).await;
    guest.send_parts(id, &picked_again, &plan, &[3]).await;
    let upload_id = server.upload_id(&authorized.object_key).await.expect("an upload");
    let keys_before = server.stored_keys().await;

    // The client's composite is its file's: the one picked again.
    let claimed = composite(&picked_again, &plan);
    let r = guest.confirm_raw(id, json!({"size": FILE, "content_type": VIDEO, "composite_sha256": claimed})).await;
    let (status, body) = problem(r).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "file_changed", "{body}");

    let state = guest.status_of(id).await;
    assert_eq!(state["state"], "rejected", "{state}");
    assert_eq!(state["code"], "file_changed", "{state}");
    assert_eq!(server.counts().await.1, 0, "no media record");
    assert!(!server.upload_is_open(&authorized.object_key, &upload_id).await, "the upload is aborted");
    assert_eq!(server.stored_keys().await, keys_before, "nothing assembled");
    assert!(!server.stored_keys().await.contains(&authorized.object_key));

    // Asked again (its answer lost): the same refusal, nothing made.
    let again = guest.confirm_raw(id, json!({"size": FILE, "content_type": VIDEO, "composite_sha256": claimed})).await;
    let (status, body) = problem(again).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("file_changed")));
    assert_eq!(server.counts().await.1, 0);
}

#[tokio::test]
async fn the_composite_of_the_parts_stored_confirms_and_is_recorded() {
    let server = TestServer::start_with(support::multipart::options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, _, plan) = guest.authorize_file(62).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    let claimed = composite(&bytes, &plan);
    let r = guest.confirm_raw(id, json!({"size": FILE, "content_type": VIDEO, "composite_sha256": claimed})).await;
    assert_eq!(r.status(), StatusCode::OK);
    let media: Media = r.json().await.unwrap();
    assert_eq!(media.composite_sha256.as_deref(), Some(claimed.as_str()));
    // A repeat with the same composite returns the same record.
    let r = guest.confirm_raw(id, json!({"size": FILE, "content_type": VIDEO, "composite_sha256": claimed})).await;
    let again: Media = r.json().await.unwrap();
    assert_eq!(again.id, media.id);
}

/// The object was assembled by a confirm whose answer was lost (sent
/// without a composite, as an older client does); a confirm that then
/// claims another file's composite is refused all the same.
#[tokio::test]
async fn an_object_already_assembled_is_held_to_the_composite_too() {
    let server = TestServer::start_with(support::multipart::options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(63).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    // Assemble it as a confirm would, without recording the media.
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    let listed = server.state.objects.list_parts(&authorized.object_key, &upload_id).await.unwrap().unwrap();
    server.state.objects.complete_multipart(&authorized.object_key, &upload_id, &listed).await.unwrap();

    let other = composite(&with_other_part_two(&bytes), &plan);
    let r = guest.confirm_raw(id, json!({"size": FILE, "content_type": VIDEO, "composite_sha256": other})).await;
    let (status, body) = problem(r).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("file_changed")), "{body}");
    assert_eq!(server.counts().await.1, 0, "no media record");
}

/// A client that sends no composite (an older package, or one whose hashing
/// failed halfway) cannot confirm a splice either: while the digest of a
/// stored part is known, a confirm of a file in parts must claim its
/// composite (`400 malformed_request`, nothing assembled, the attempt left
/// as it was), and the one it then claims is checked.
#[tokio::test]
async fn a_confirm_without_the_composite_assembles_nothing() {
    let server = TestServer::start_with(support::multipart::options()).await;
    let guest = server.big_guest().await;
    let original = file(FILE, 64);
    let picked_again = with_other_part_two(&original);
    let id = Uuid::new_v4();
    let plan = plan(&guest.authorize_video(id, FILE).await);
    guest.send_parts(id, &original, &plan, &[1, 2]).await;
    guest.send_parts(id, &picked_again, &plan, &[3]).await;
    let keys_before = server.stored_keys().await;

    for _ in 0..2 {
        let (status, body) = problem(guest.confirm_video_without_composite(id, FILE).await).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("malformed_request")), "{body}");
        assert!(body["detail"].as_str().unwrap().contains("composite_sha256"), "{body}");
    }
    assert_eq!(server.stored_keys().await, keys_before, "nothing assembled");
    assert_eq!(server.counts().await.1, 0, "no media record");
    assert_eq!(guest.status_of(id).await["state"], "authorized", "the attempt is as it was");

    // Its file's composite, claimed: the splice is found.
    let claimed = composite(&picked_again, &plan);
    let r = guest.confirm_raw(id, json!({"size": FILE, "content_type": VIDEO, "composite_sha256": claimed})).await;
    let (status, body) = problem(r).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("file_changed")));
    assert_eq!(server.counts().await.1, 0);
}

/// An object assembled by a confirm whose answer was lost is held to the
/// composite as well: a repeat without one is refused, not recorded.
#[tokio::test]
async fn an_object_already_assembled_needs_the_composite_too() {
    let server = TestServer::start_with(support::multipart::options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(65).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    let listed = server.state.objects.list_parts(&authorized.object_key, &upload_id).await.unwrap().unwrap();
    server.state.objects.complete_multipart(&authorized.object_key, &upload_id, &listed).await.unwrap();

    let (status, body) = problem(guest.confirm_video_without_composite(id, FILE).await).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::BAD_REQUEST, Some("malformed_request")), "{body}");
    assert_eq!(server.counts().await.1, 0, "no media record");
    assert_eq!(guest.confirm_video(id, FILE).await.status(), StatusCode::OK, "with its composite it confirms");
}
