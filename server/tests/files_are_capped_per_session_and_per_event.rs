//! How many files one session and one event may have is capped, beside
//! their bytes (a duplicate is a 0-byte row, and a 1-byte upload is cheap):
//! the attempts a session or an event was ever asked for
//! (`--max-attempts-per-session`, `--max-attempts-per-event`), and the media
//! they keep with their live uploads (`--max-media-per-session`,
//! `--max-media-per-event`). Past one: `403 session_files_exceeded` or
//! `403 event_files_exceeded`, nothing stored; a rejected or withdrawn media
//! stops counting as kept; another event is untouched.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::json;
use support::limits::with_limits;
use support::{Guest, problem};
use uuid::Uuid;

/// Authorizes a small PNG: `None` when created, else the refusal's code.
async fn refusal(guest: &Guest<'_>) -> Option<String> {
    let r = guest
        .authorize_raw(json!({"id": Uuid::new_v4(), "filename": "a.png", "size": 3, "content_type": "image/png"}))
        .await;
    if r.status() == StatusCode::CREATED {
        return None;
    }
    let (status, p) = problem(r).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{p}");
    Some(p["code"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_session_makes_at_most_its_attempts_and_keeps_at_most_its_media() {
    let server = support::TestServer::start_with(with_limits(|l| {
        l.max_attempts_per_session = 4;
        l.max_media_per_session = 2;
    }))
    .await;
    let event = server.create_event("files-session", 1_000_000, &["image/*"], "required").await;
    let guest = server.guest_of(&event).await;
    let (_, first) = guest.upload(b"one".to_vec()).await;
    let (withdrawn, _) = guest.upload(b"two".to_vec()).await;
    assert_eq!(refusal(&guest).await.as_deref(), Some("session_files_exceeded"), "two media kept");
    // Rejected and withdrawn stop being kept.
    assert_eq!(server.moderate(&event.host_token, first.id, "reject", None).await.status(), StatusCode::OK);
    let r = server.call(Method::DELETE, &format!("/v1/attempts/{withdrawn}"), Some(&guest.session), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    for n in ["third", "fourth"] {
        let id = Uuid::new_v4();
        assert_eq!(guest.authorize(id, 3).await.id, id, "the {n} attempt");
        let r = server.call(Method::DELETE, &format!("/v1/attempts/{id}"), Some(&guest.session), None).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
    }
    // Nothing kept or live, but four attempts made, whatever became of them.
    assert_eq!(refusal(&guest).await.as_deref(), Some("session_files_exceeded"));
    // Another session of the event, and another event, go on.
    assert_eq!(refusal(&server.guest_of(&event).await).await, None);
    server.another_event_still_uploads().await;
}

#[tokio::test]
async fn an_event_is_asked_for_at_most_its_attempts_and_keeps_at_most_its_media() {
    let server = support::TestServer::start_with(with_limits(|l| {
        l.max_attempts_per_event = 4;
        l.max_media_per_event = 2;
    }))
    .await;
    let event = server.create_event("files-event", 1_000_000, &["image/*"], "required").await;
    let (a, b) = (server.guest_of(&event).await, server.guest_of(&event).await);
    let (_, kept) = a.upload(b"one".to_vec()).await;
    b.upload(b"two".to_vec()).await;
    assert_eq!(refusal(&server.guest_of(&event).await).await.as_deref(), Some("event_files_exceeded"), "two kept");
    assert_eq!(server.moderate(&event.host_token, kept.id, "reject", None).await.status(), StatusCode::OK);
    // A rejected media is no longer kept: room for one live upload.
    let live = Uuid::new_v4();
    assert_eq!(b.authorize(live, 3).await.id, live, "the third attempt");
    assert_eq!(refusal(&a).await.as_deref(), Some("event_files_exceeded"), "one kept, one live");
    let r = server.call(Method::DELETE, &format!("/v1/attempts/{live}"), Some(&b.session), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let fourth = Uuid::new_v4();
    assert_eq!(a.authorize(fourth, 3).await.id, fourth, "the fourth, once the live one was withdrawn");
    let r = server.call(Method::DELETE, &format!("/v1/attempts/{fourth}"), Some(&a.session), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // One media kept, none live: room for a media, but four attempts were
    // asked for.
    assert_eq!(refusal(&b).await.as_deref(), Some("event_files_exceeded"), "four attempts asked for");
    server.another_event_still_uploads().await;
}
