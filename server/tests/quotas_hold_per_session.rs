//! A guest session's quotas hold, checked before anything is stored: its
//! unconfirmed attempts (`403 too_many_unconfirmed`) and the bytes it has
//! authorized (`403 session_bytes_exceeded`) — even when it sends many
//! authorizes at once — while a guest of another event still uploads. A
//! repeat of an attempt already made is never refused by them.

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use support::limits::with_limits;
use support::{TestServer, problem};
use uuid::Uuid;

fn png(id: Uuid, size: u64) -> serde_json::Value {
    json!({"id": id, "filename": "photo.png", "size": size, "content_type": "image/png"})
}

async fn refused_with(r: reqwest::Response, code: &str) {
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some(code)), "{p}");
    assert_eq!(p["retryable"], false);
}

#[tokio::test]
async fn unconfirmed_attempts_per_session_are_capped() {
    let server = TestServer::start_with(with_limits(|l| l.max_unconfirmed_per_session = 3)).await;
    let guest = server.guest().await;
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    let mut authorized = Vec::new();
    for id in &ids {
        authorized.push(guest.authorize(*id, 5).await);
    }

    // The abuse: more new attempts, none confirmed.
    for _ in 0..5 {
        refused_with(guest.authorize_raw(png(Uuid::new_v4(), 5)).await, "too_many_unconfirmed").await;
    }
    assert_eq!(server.counts().await, (3, 0), "nothing stored for the refused ones");
    // A repeat of one it has is create-or-return, not a new attempt.
    assert_eq!(guest.authorize_raw(png(ids[0], 5)).await.status(), StatusCode::OK);
    // Another session of the same event has its own allowance.
    server.guest_of(&guest.event).await.authorize(Uuid::new_v4(), 5).await;
    // And another event's guest uploads meanwhile.
    server.another_event_still_uploads().await;

    // Confirming one makes room for one.
    assert_eq!(server.put(authorized[0].put().unwrap(), b"photo".to_vec()).await.status(), StatusCode::OK);
    assert_eq!(guest.confirm(ids[0], 5).await.status(), StatusCode::OK);
    guest.authorize(Uuid::new_v4(), 5).await;
    refused_with(guest.authorize_raw(png(Uuid::new_v4(), 5)).await, "too_many_unconfirmed").await;

    // Expired attempts hold nothing.
    server.clock.advance(server.state.lifetimes.attempt_ttl_ms());
    for _ in 0..3 {
        guest.authorize(Uuid::new_v4(), 5).await;
    }
    refused_with(guest.authorize_raw(png(Uuid::new_v4(), 5)).await, "too_many_unconfirmed").await;
}

#[tokio::test]
async fn bytes_per_session_are_capped() {
    let server = TestServer::start_with(with_limits(|l| l.max_bytes_per_session = 10)).await;
    let guest = server.guest().await;
    let (kept, _) = guest.upload(b"123456".to_vec()).await;

    refused_with(guest.authorize_raw(png(Uuid::new_v4(), 5)).await, "session_bytes_exceeded").await;
    refused_with(guest.authorize_raw(png(Uuid::new_v4(), 1_000)).await, "session_bytes_exceeded").await;
    assert_eq!(server.counts().await, (1, 1), "nothing stored for the refused ones");
    // Exactly up to the quota is fine.
    let rest = Uuid::new_v4();
    let a = guest.authorize(rest, 4).await;
    refused_with(guest.authorize_raw(png(Uuid::new_v4(), 1)).await, "session_bytes_exceeded").await;
    server.another_event_still_uploads().await;

    // A rejected attempt holds nothing (its bytes are deleted).
    assert_eq!(server.put(a.put().unwrap(), b"1234".to_vec()).await.status(), StatusCode::OK);
    assert_eq!(guest.confirm(rest, 3).await.status(), StatusCode::UNPROCESSABLE_ENTITY);
    guest.authorize(Uuid::new_v4(), 4).await;
    // The confirmed one still does.
    refused_with(guest.authorize_raw(png(Uuid::new_v4(), 1)).await, "session_bytes_exceeded").await;
    assert_eq!(guest.status(&[kept]).await["results"][0]["state"], "confirmed");
}

/// Many authorizes at once from one session: the quota is counted in the
/// transaction that inserts, so exactly the allowance gets through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_authorizes_gets_exactly_the_allowance() {
    let server = TestServer::start_with(with_limits(|l| {
        l.max_unconfirmed_per_session = 4;
        l.max_bytes_per_session = 1_000;
    }))
    .await;
    let guest = server.guest().await;
    let answers = futures_util::future::join_all((0..24).map(|_| guest.authorize_raw(png(Uuid::new_v4(), 5)))).await;
    let created = answers.iter().filter(|r| r.status() == StatusCode::CREATED).count();
    let refused = answers.iter().filter(|r| r.status() == StatusCode::FORBIDDEN).count();
    assert_eq!((created, refused), (4, 20));
    assert_eq!(server.counts().await, (4, 0));

    // And bytes: a second session, 1000 bytes, 24 authorizes of 300.
    let other = server.guest_of(&guest.event).await;
    let answers = futures_util::future::join_all((0..24).map(|_| other.authorize_raw(png(Uuid::new_v4(), 300)))).await;
    let created = answers.iter().filter(|r| r.status() == StatusCode::CREATED).count();
    assert_eq!(created, 3, "3 × 300 ≤ 1000 < 4 × 300");
    assert_eq!(server.counts().await, (7, 0));
    server.another_event_still_uploads().await;
}
