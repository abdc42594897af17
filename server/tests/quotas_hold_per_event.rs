//! An event's quotas hold, checked before anything is stored: the guest
//! sessions it opens per hour (`403 too_many_sessions`) and the bytes it
//! holds (`403 event_bytes_exceeded`) — even against a burst — while a
//! guest of another event still uploads.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::json;
use support::limits::with_limits;
use support::{TestServer, problem};
use uuid::Uuid;

const HOUR: i64 = 3_600_000;

fn png(id: Uuid, size: u64) -> serde_json::Value {
    json!({"id": id, "filename": "photo.png", "size": size, "content_type": "image/png"})
}

async fn join_raw(server: &TestServer, event: &upload_once_core::wire::CreateEventResponse) -> reqwest::Response {
    server
        .call(
            Method::POST,
            &format!("/v1/events/{}/sessions", event.event.slug),
            None,
            Some(json!({"guest_code": event.guest_code})),
        )
        .await
}

#[tokio::test]
async fn sessions_per_event_per_hour_are_capped() {
    let server = TestServer::start_with(with_limits(|l| l.max_sessions_per_event_per_hour = 3)).await;
    let event = server.create_event("capped", 1_000_000, &["image/*"], "required").await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(server.guest_of(&event).await);
    }
    // The abuse: more sessions from the printed code.
    for _ in 0..5 {
        let (status, p) = problem(join_raw(&server, &event).await).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("too_many_sessions")));
    }
    // The sessions it has keep working; other events are not affected.
    let (id, _) = sessions[0].upload(b"photo".to_vec()).await;
    for session in &sessions[1..] {
        session.upload(b"photo".to_vec()).await;
    }
    server.another_event_still_uploads().await;

    // The hour slides: a session opened more than an hour ago no longer
    // counts (one that authorized nothing would stop counting after 10
    // minutes: a_session_flood_from_one_address_cannot_fill_an_event).
    server.clock.advance(HOUR - 1);
    assert_eq!(join_raw(&server, &event).await.status(), StatusCode::FORBIDDEN, "within the hour: still counted");
    server.clock.advance(1);
    assert_eq!(join_raw(&server, &event).await.status(), StatusCode::CREATED);
    assert_eq!(sessions[0].status(&[id]).await["results"][0]["state"], "confirmed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_joins_gets_exactly_the_allowance() {
    let server = TestServer::start_with(with_limits(|l| l.max_sessions_per_event_per_hour = 5)).await;
    let event = server.create_event("burst", 1_000_000, &["image/*"], "required").await;
    let answers = futures_util::future::join_all((0..30).map(|_| join_raw(&server, &event))).await;
    let statuses: Vec<StatusCode> = answers.iter().map(|r| r.status()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CREATED).count(), 5, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::FORBIDDEN).count(), 25, "{statuses:?}");
    server.another_event_still_uploads().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bytes_per_event_are_capped() {
    let server = TestServer::start_with(with_limits(|l| l.max_bytes_per_event = 100)).await;
    let event = server.create_event("full", 1_000_000, &["image/*"], "required").await;
    let first = server.guest_of(&event).await;
    let (kept, _) = first.upload(vec![7u8; 60]).await;

    // The abuse, from many sessions at once: 40 bytes are left, 10 at a time.
    let guests: Vec<_> = futures_util::future::join_all((0..8).map(|_| server.guest_of(&event))).await;
    let answers = futures_util::future::join_all(guests.iter().map(|g| g.authorize_raw(png(Uuid::new_v4(), 10)))).await;
    let created = answers.iter().filter(|r| r.status() == StatusCode::CREATED).count();
    assert_eq!(created, 4, "60 + 4 × 10 = 100");
    for r in answers.into_iter().filter(|r| r.status() != StatusCode::CREATED) {
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("event_bytes_exceeded")));
    }
    assert_eq!(server.counts().await, (5, 1), "nothing stored for the refused ones");
    let (status, p) = problem(first.authorize_raw(png(Uuid::new_v4(), 1)).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("event_bytes_exceeded")));

    // Another event is not affected.
    server.another_event_still_uploads().await;
    // When the unconfirmed attempts expire, their bytes are free again; the
    // confirmed ones stay counted.
    server.clock.advance(server.state.lifetimes.attempt_ttl_ms());
    let late = server.guest_of(&event).await;
    late.authorize(Uuid::new_v4(), 40).await;
    let (status, _) = problem(late.authorize_raw(png(Uuid::new_v4(), 1)).await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(first.status(&[kept]).await["results"][0]["state"], "confirmed");
}
