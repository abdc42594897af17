//! A different photo is never merged: files with the same name, size, type
//! (and, in a browser, modification time) but other bytes are two media in
//! an event that stores the same bytes once, whether they are hashed before
//! authorize, hashed only by the store, or go up in parts.

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use support::multipart::{FILE, file, options, plan};
use support::{Guest, TestServer};
use upload_once_core::wire::{AttemptResponse, Media};
use uuid::Uuid;

/// Two files of `len` bytes that differ in their last byte only.
fn twins(len: u64, seed: u8) -> (Vec<u8>, Vec<u8>) {
    let one = file(len, seed);
    let mut other = one.clone();
    *other.last_mut().unwrap() ^= 1;
    (one, other)
}

/// Authorize `IMG_0001.jpg` (with its SHA-256 or not), PUT, confirm.
async fn upload_jpeg(guest: &Guest<'_>, bytes: &[u8], hashed: bool) -> Media {
    let id = Uuid::new_v4();
    let mut body = json!({"id": id, "filename": "IMG_0001.jpg", "size": bytes.len(), "content_type": "image/jpeg"});
    if hashed {
        body["sha256"] = json!(upload_once_server::secrets::sha256_hex(bytes));
    }
    let r = guest.authorize_raw(body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let a: AttemptResponse = r.json().await.unwrap();
    let put = a.put().expect("not a duplicate: its bytes go up");
    assert_eq!(guest.server.put(put, bytes.to_vec()).await.status(), StatusCode::OK);
    let r = guest.confirm_raw(id, json!({"size": bytes.len(), "content_type": "image/jpeg"})).await;
    assert_eq!(r.status(), StatusCode::OK);
    let media: Media = r.json().await.unwrap();
    assert_eq!(media.attempt_id, id, "its own media");
    media
}

#[tokio::test]
async fn same_name_size_and_type_with_other_bytes_make_two_media() {
    let server = TestServer::start().await;
    let first = server.guest_in_scope("event").await;
    let second = server.guest_of(&first.event).await;
    for hashed in [true, false] {
        let (one, other) = twins(20_000, u8::from(hashed));
        let a = upload_jpeg(&first, &one, hashed).await;
        let b = upload_jpeg(&second, &other, hashed).await;
        assert_ne!(a.id, b.id, "hashed: {hashed}");
        if a.sha256.is_some() {
            assert_ne!(a.sha256, b.sha256, "the digests the store kept");
        }
        // And within one session.
        let (one, other) = twins(20_000, 10 + u8::from(hashed));
        let c = upload_jpeg(&first, &one, hashed).await;
        let d = upload_jpeg(&first, &other, hashed).await;
        assert_ne!(c.id, d.id, "one session, hashed: {hashed}");
    }
    let listed = server.host_list(&first.event).await;
    assert_eq!((listed.media.len(), listed.deduplicated), (8, Some(0)));
    assert_eq!(server.stored_keys().await.len(), 8);
}

#[tokio::test]
async fn large_files_that_differ_in_one_part_make_two_media() {
    let server = TestServer::start_with(options()).await;
    let first = server.big_guest().await;
    let second = server.guest_of(&first.event).await;
    let (one, other) = twins(FILE, 9);
    let mut media = Vec::new();
    for (guest, bytes) in [(&first, &one), (&second, &other)] {
        let id = Uuid::new_v4();
        let a = guest.authorize_video(id, FILE).await;
        guest.send_parts(id, bytes, &plan(&a), &[1, 2, 3]).await;
        let r = guest.confirm_video(id, FILE).await;
        assert_eq!(r.status(), StatusCode::OK);
        let m: Media = r.json().await.unwrap();
        assert_eq!(m.attempt_id, id, "its own media");
        media.push(m);
    }
    assert_ne!(media[0].composite_sha256, media[1].composite_sha256);
    assert_eq!(server.stored_keys().await.len(), 2);
    assert_eq!(server.host_list(&first.event).await.deduplicated, Some(0));
}
