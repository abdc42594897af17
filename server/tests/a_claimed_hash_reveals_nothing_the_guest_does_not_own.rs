//! The guest code is public, so a guest may claim the SHA-256 of a photo it
//! never had (a hash-guessing guest). A claim of another guest's photo that
//! the host has not approved (waiting, or rejected) is answered exactly as a
//! new file's: the claimer must send the bytes, and only then is it told
//! (the store keeps one copy). Only a photo on the wall, which every guest
//! sees, is "already shared" at once. Nothing answers with another guest's
//! filename, attempt id or object key, or the host's reason. A claim of
//! another size or type is no duplicate.
//! And a duplicate stores nothing, so a flood of claims of one small photo
//! never fills the event's quota.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::TestServer;
use support::limits::with_limits;
use support::multipart::file;
use upload_once_core::wire::{AttemptResponse, AttemptState, Media};
use upload_once_server::secrets::sha256_hex;
use uuid::Uuid;

/// What another guest uploaded: its attempt id, media, object key and
/// filename (none of which a claimer may learn).
struct Secret {
    attempt_id: Uuid,
    media: Media,
}

impl Secret {
    fn assert_not_in(&self, answer: &str) {
        for (what, text) in [
            ("the other guest's attempt id", self.attempt_id.to_string()),
            ("its object key", self.media.object_key.clone()),
            ("its filename", self.media.filename.clone()),
            ("the host's reason", "too blurry for the wall".to_owned()),
            ("a URL of its media", format!("/v1/media/{}/", self.media.id)),
        ] {
            assert!(!answer.contains(&text), "the answer gives away {what} ({text}): {answer}");
        }
    }
}

/// A claim of the hash of `bytes` (as `claimed.png`), with the size given.
fn claim(id: Uuid, bytes: &[u8], size: usize) -> Value {
    json!({"id": id, "filename": "claimed.png", "size": size, "content_type": "image/png", "sha256": sha256_hex(bytes)})
}

#[tokio::test]
async fn a_hash_guessing_guest_learns_only_already_shared() {
    // Deduplication keys a single PUT by the SHA-256 the store verified and kept.
    if support::store_lacks("a_hash_guessing_guest_learns_only_already_shared", support::StoreCheck::PutChecksum) {
        return;
    }
    let server = TestServer::start().await;
    let owner = server.guest_in_scope("event").await;
    let photo = file(30_000, 91);
    let id = Uuid::new_v4();
    let r = owner
        .authorize_raw(json!({"id": id, "filename": "secret-beach.png", "size": photo.len(),
                              "content_type": "image/png", "sha256": sha256_hex(&photo)}))
        .await;
    let a: AttemptResponse = r.json().await.unwrap();
    assert_eq!(server.put(a.put().unwrap(), photo.clone()).await.status(), StatusCode::OK);
    let media: Media = owner.confirm_hashed(id, &photo).await.json().await.unwrap();
    let secret = Secret { attempt_id: id, media: media.clone() };

    // Pending (the event asks the host first): the claim is answered as a
    // new file's, so it tells nothing of what another guest sent.
    let claimer = server.guest_of(&owner.event).await;
    let fresh = claimer.authorize_raw(claim(Uuid::new_v4(), &file(30_000, 95), 30_000)).await;
    let fresh: Value = fresh.json().await.unwrap();
    let claimed = Uuid::new_v4();
    let r = claimer.authorize_raw(claim(claimed, &photo, photo.len())).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let text = r.text().await.unwrap();
    secret.assert_not_in(&text);
    let shape = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(shape(&answer), shape(&fresh), "the same answer as for a file nobody sent: {text}");
    let answer: AttemptResponse = serde_json::from_str(&text).unwrap();
    assert_eq!(answer.state, AttemptState::Authorized, "not \"already shared\": {text}");
    assert!(answer.media.is_none() && answer.put().is_some());

    // Rejected with a reason: the same.
    let r = server.moderate(&owner.event.host_token, media.id, "reject", Some("too blurry for the wall")).await;
    assert_eq!(r.status(), StatusCode::OK);
    let again = Uuid::new_v4();
    let text = claimer.authorize_raw(claim(again, &photo, photo.len())).await.text().await.unwrap();
    secret.assert_not_in(&text);
    let answer: AttemptResponse = serde_json::from_str(&text).unwrap();
    assert_eq!(answer.state, AttemptState::Authorized, "not \"already shared\": {text}");

    // A claimer who does hold the bytes sends them, and the store checks
    // them: kept once, the claimer's attempt confirmed against the one copy,
    // still without the other guest's filename or the host's reason.
    assert_eq!(server.put(answer.put().unwrap(), photo.clone()).await.status(), StatusCode::OK);
    let text = claimer.confirm_hashed(again, &photo).await.text().await.unwrap();
    secret.assert_not_in(&text);
    let confirmed: Media = serde_json::from_str(&text).unwrap();
    assert_eq!((confirmed.id, confirmed.attempt_id, confirmed.duplicate), (media.id, again, true));
    assert_eq!(confirmed.filename, "claimed.png", "its own filename");
    assert_eq!(confirmed.moderation_reason, None);
    let claimed = again;

    // Approved: on the wall, which every guest sees; now it may link there.
    let r = server.moderate(&owner.event.host_token, media.id, "approve", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let status: Value = claimer.get(claimed).await.json().await.unwrap();
    assert_eq!(status["media"]["moderation"], "approved");
    let url = status["media"]["url"].as_str().expect("the wall's rendition");
    assert!(url.contains(&format!("/v1/media/{}/display?", media.id)), "{url}");
    assert!(!status.to_string().contains(&secret.media.object_key));
    // And a claim of it now is "already shared" at once: nothing to send.
    let text = claimer.authorize_raw(claim(Uuid::new_v4(), &photo, photo.len())).await.text().await.unwrap();
    assert!(!text.contains(&secret.media.object_key) && !text.contains("secret-beach"), "{text}");
    let answer: AttemptResponse = serde_json::from_str(&text).unwrap();
    assert_eq!(answer.state, AttemptState::Confirmed, "on the wall: already shared");
    assert!(answer.media.expect("already shared").duplicate);
}

#[tokio::test]
async fn a_claim_of_another_size_or_type_is_no_duplicate() {
    let server = TestServer::start().await;
    let owner = server.guest_in_scope("event").await;
    let photo = file(20_000, 92);
    owner.upload_hashed(&photo).await;
    let claimer = server.guest_of(&owner.event).await;

    let r = claimer.authorize_raw(claim(Uuid::new_v4(), &photo, photo.len() + 1)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let answer: AttemptResponse = r.json().await.unwrap();
    assert_eq!(answer.state, AttemptState::Authorized, "a file to upload and check, not a duplicate");
    assert!(answer.media.is_none() && answer.put().is_some());

    let mut other_type = claim(Uuid::new_v4(), &photo, photo.len());
    other_type["content_type"] = json!("image/jpeg");
    let answer: AttemptResponse = claimer.authorize_raw(other_type).await.json().await.unwrap();
    assert_eq!(answer.state, AttemptState::Authorized);
}

#[tokio::test]
async fn claims_of_one_small_photo_never_fill_the_event() {
    // Deduplication keys a single PUT by the SHA-256 the store verified and kept.
    if support::store_lacks("claims_of_one_small_photo_never_fill_the_event", support::StoreCheck::PutChecksum) {
        return;
    }
    // The event holds 64 KiB; the photo is 8 KiB.
    let server = TestServer::start_with(with_limits(|l| l.max_bytes_per_event = 64 * 1024)).await;
    let owner = server.guest_in_scope("event").await;
    let photo = file(8 * 1024, 93);
    let (_, media, _) = owner.upload_hashed(&photo).await;
    // On the wall, so a claim of it is a duplicate at once (a claim of a
    // photo the claimer cannot see is a new file, reserved like any other
    // until its URL lapses: reservations_never_uploaded_stop_holding_the_event).
    let r = server.moderate(&owner.event.host_token, media.id, "approve", None).await;
    assert_eq!(r.status(), StatusCode::OK);

    // Forty claims of it, from other sessions: each a duplicate.
    for _ in 0..40 {
        let claimer = server.guest_of(&owner.event).await;
        let r = claimer.authorize_raw(claim(Uuid::new_v4(), &photo, photo.len())).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{}", r.text().await.unwrap_or_default());
    }

    // An honest guest still uploads a photo of 32 KiB: the event holds the
    // 8 KiB stored once, not forty times.
    let honest = server.guest_of(&owner.event).await;
    let r = honest.authorize_hashed(Uuid::new_v4(), &file(32 * 1024, 94)).await;
    let status = r.status();
    let body = r.text().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(!body.contains("event_bytes_exceeded"));
}
