//! A duplicate found at authorize transfers nothing: an authorize whose
//! SHA-256 is already confirmed in the event's dedup scope creates the
//! attempt already confirmed, pointing to the media that holds those bytes
//! (`duplicate: true`), with no upload instruction. No object is ever
//! stored for it and there is nothing to sweep; renew and parts answer
//! `already_confirmed`; status, confirm and a repeated authorize answer the
//! same media, with that media's moderation.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::multipart::file;
use support::{TestServer, problem};
use upload_once_core::wire::{AttemptResponse, AttemptState, Media};
use upload_once_server::storage::PutGrant;
use uuid::Uuid;

#[tokio::test]
async fn an_authorize_of_bytes_already_stored_is_confirmed_at_once() {
    // Deduplication keys a single PUT by the SHA-256 the store verified and kept.
    if support::store_lacks(
        "an_authorize_of_bytes_already_stored_is_confirmed_at_once",
        support::StoreCheck::PutChecksum,
    ) {
        return;
    }
    let server = TestServer::start().await;
    let first = server.guest_in_scope("event").await;
    let photo = file(30_000, 3);
    let (first_id, stored, sent) = first.upload_hashed(&photo).await;
    assert!(sent, "the first upload sends its bytes");
    let objects = server.stored_keys().await;
    assert_eq!(objects.len(), 1);
    // On the wall, which every guest sees (a photo another guest cannot see
    // is claimed like a new file: a_claimed_hash_reveals_nothing_the_guest_does_not_own).
    let r = server.moderate(&first.event.host_token, stored.id, "approve", None).await;
    assert_eq!(r.status(), StatusCode::OK);

    // Another guest (another device) picks the same photo.
    let second = server.guest_of(&first.event).await;
    let id = Uuid::new_v4();
    let r = second.authorize_hashed(id, &photo).await;
    assert_eq!(r.status(), StatusCode::CREATED, "created now");
    let answer: AttemptResponse = r.json().await.unwrap();
    assert_eq!(answer.state, AttemptState::Confirmed);
    assert!(answer.upload.is_none(), "no upload instruction: {answer:?}");
    let media = answer.media.clone().expect("the media");
    assert_eq!(media.id, stored.id, "the media the first upload stored");
    assert!(media.duplicate, "and says so");
    assert!(media.url.is_some(), "a URL of the photo on the wall");
    assert_eq!(media.moderation, upload_once_core::wire::Moderation::Approved);

    // Nothing was, or can be, stored for it.
    assert!(server.state.objects.head(&answer.object_key).await.unwrap().is_none());
    let renew = second.renew(id).await;
    assert_eq!(problem(renew).await.1["code"], "already_confirmed", "no URL to renew");
    let path = format!("/v1/attempts/{id}/parts");
    let body = json!({"parts": [{"number": 1}]});
    let parts = server.call(Method::POST, &path, Some(&second.session), Some(body)).await;
    let (status, p) = problem(parts).await;
    assert!(status.is_client_error() && p["code"] != "internal", "no parts to sign: {p}");
    if server.state.local_store.as_deref().is_some() {
        // Even a URL the server would sign for its key stores nothing.
        let url = server.state.objects.presign_put(&PutGrant {
            key: &answer.object_key,
            content_type: "image/png",
            size: photo.len() as u64,
            sha256: None,
            expires_at: server.state.now() + 60_000,
        });
        let (status, p) = problem(server.put(&url, photo.clone()).await).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::CONFLICT, Some("already_confirmed")));
    }
    assert_eq!(server.stored_keys().await, objects, "still the one object");

    // Status, confirm and a repeated authorize answer the same media.
    let status = second.status_of(id).await;
    assert_eq!(status["state"], "confirmed");
    assert_eq!(status["media"]["id"], stored.id.to_string());
    assert_eq!(status["media"]["duplicate"], true);
    let confirmed = second.confirm_hashed(id, &photo).await;
    assert_eq!(confirmed.status(), StatusCode::OK);
    let confirmed: Media = confirmed.json().await.unwrap();
    assert_eq!((confirmed.id, confirmed.duplicate), (stored.id, true), "the other attempt's media");
    assert_eq!(confirmed.attempt_id, id, "as this guest's own attempt, not {first_id}");
    let again = second.authorize_hashed(id, &photo).await;
    assert_eq!(again.status(), StatusCode::OK, "a repeat");
    let again: AttemptResponse = again.json().await.unwrap();
    assert_eq!((again.state, again.object_key.as_str()), (AttemptState::Confirmed, answer.object_key.as_str()));
    assert_eq!(again.media, answer.media);
    // The first attempt's own view is no duplicate.
    assert_eq!(first.status_of(first_id).await["media"].get("duplicate"), None);

    // The host's decision shows on the duplicate too, but not the host's
    // reason (a remark on another guest's upload).
    let r = server.moderate(&first.event.host_token, stored.id, "reject", Some("blurry")).await;
    assert_eq!(r.status(), StatusCode::OK);
    let status: Value = second.status_of(id).await;
    assert_eq!((status["media"]["moderation"].as_str(), status["media"]["reason"].as_str()), (Some("rejected"), None));

    // Nothing to sweep, even once everything has expired.
    server.clock.advance(server.state.lifetimes.attempt_ttl_ms() + 1);
    server.sweep().await;
    assert_eq!(server.stored_keys().await, objects, "the media's object is kept");
    assert_eq!(second.status_of(id).await["state"], "confirmed");
    let listed = server.host_list(&first.event).await;
    assert_eq!((listed.media.len(), listed.deduplicated), (1, Some(1)), "one media; one upload deduplicated");
    assert_eq!(server.counts().await, (2, 1));
}

#[tokio::test]
async fn the_scope_decides_who_meets_whose_bytes() {
    // Deduplication keys a single PUT by the SHA-256 the store verified and kept.
    if support::store_lacks("the_scope_decides_who_meets_whose_bytes", support::StoreCheck::PutChecksum) {
        return;
    }
    let server = TestServer::start().await;
    let photo = file(30_000, 4);
    for (dedup, same_session, other_session) in [("guest", true, false), ("none", false, false), ("event", true, true)]
    {
        let owner = server.guest_in_scope(dedup).await;
        let (_, stored, _) = owner.upload_hashed(&photo).await;
        // Approved: another session may see it.
        let r = server.moderate(&owner.event.host_token, stored.id, "approve", None).await;
        assert_eq!(r.status(), StatusCode::OK);
        let again = owner.authorize_hashed(Uuid::new_v4(), &photo).await;
        let again: AttemptResponse = again.json().await.unwrap();
        assert_eq!(again.state == AttemptState::Confirmed, same_session, "{dedup}: the same session");
        let other = server.guest_of(&owner.event).await;
        let other: AttemptResponse = other.authorize_hashed(Uuid::new_v4(), &photo).await.json().await.unwrap();
        assert_eq!(other.state == AttemptState::Confirmed, other_session, "{dedup}: another session");
        assert_eq!(other.upload.is_none(), other_session, "{dedup}: an upload only when it is not a duplicate");
    }
    // Another event never holds this event's bytes.
    let elsewhere = server.guest_in_scope("event").await;
    let a: AttemptResponse = elsewhere.authorize_hashed(Uuid::new_v4(), &photo).await.json().await.unwrap();
    assert_eq!(a.state, AttemptState::Authorized, "another event");
}
