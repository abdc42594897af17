//! What the host rejected and what a guest withdrew stops counting against
//! the event's and the session's byte caps at once: the caps count what is
//! kept (confirmed and not rejected, or reserved by a live attempt), not
//! what was ever sent. A rejected photo the host approves again counts
//! again. (The objects themselves are deleted later, by the sweeper: at
//! once for a withdrawal, after `--rejected-retention` for a rejection.)

use crate::support;

use reqwest::{Method, StatusCode};
use support::limits::with_limits;
use support::{Guest, TestServer, problem};
use uuid::Uuid;

const PHOTO: usize = 220_000;

async fn withdraw(guest: &Guest<'_>, id: Uuid) {
    let r = guest.server.call(Method::DELETE, &format!("/v1/attempts/{id}"), Some(&guest.session), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT, "withdraw");
}

async fn decide(guest: &Guest<'_>, media: Uuid, decision: &str) {
    let r = guest.server.moderate(&guest.event.host_token, media, decision, None).await;
    assert_eq!(r.status(), StatusCode::OK, "{decision}");
}

/// Authorizes `size` bytes: the status and, when refused, the problem's code.
async fn authorize(guest: &Guest<'_>, size: u64) -> (StatusCode, Option<String>) {
    let r = guest
        .authorize_raw(serde_json::json!({
            "id": Uuid::new_v4(), "filename": "photo.png", "size": size, "content_type": "image/png"
        }))
        .await;
    if r.status().is_success() {
        return (r.status(), None);
    }
    let (status, p) = problem(r).await;
    (status, p["code"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn the_event_cap_counts_only_what_is_kept() {
    let server = TestServer::start_with(with_limits(|l| l.max_bytes_per_event = 1_000_000)).await;
    let event = server.create_event("kept-event", 1_000_000, &["image/*"], "required").await;
    let first = server.guest_of(&event).await;
    let mut media = Vec::new();
    for n in 0..4u8 {
        let (id, m) = first.upload(vec![n; PHOTO]).await;
        media.push((id, m.id));
    }
    // The host rejects three; the guest withdraws the fourth.
    for (_, m) in &media[..3] {
        decide(&first, *m, "reject").await;
    }
    withdraw(&first, media[3].0).await;

    // Another guest's 600 kB fits: nothing of the first guest's is kept.
    let second = server.guest_of(&event).await;
    let (_, kept) = second.upload(vec![9; 600_000]).await;
    decide(&second, kept.id, "approve").await;

    // A rejected photo approved again is kept again, and counts again:
    // 600 + 220 kB held, so 200 kB more would pass the cap.
    decide(&first, media[0].1, "approve").await;
    assert_eq!(authorize(&second, 200_000).await, (StatusCode::FORBIDDEN, Some("event_bytes_exceeded".into())));
    assert_eq!(authorize(&second, 150_000).await.0, StatusCode::CREATED);
    server.another_event_still_uploads().await;
}

#[tokio::test]
async fn the_session_cap_counts_only_what_is_kept() {
    let server = TestServer::start_with(with_limits(|l| l.max_bytes_per_session = 500_000)).await;
    let event = server.create_event("kept-session", 1_000_000, &["image/*"], "required").await;
    let guest = server.guest_of(&event).await;
    let (_, rejected) = guest.upload(vec![1; PHOTO]).await;
    let (withdrawn, _) = guest.upload(vec![2; PHOTO]).await;
    assert_eq!(authorize(&guest, PHOTO as u64).await, (StatusCode::FORBIDDEN, Some("session_bytes_exceeded".into())));

    decide(&guest, rejected.id, "reject").await;
    withdraw(&guest, withdrawn).await;
    // Both freed: two more photos fit in the session again.
    guest.upload(vec![3; PHOTO]).await;
    guest.upload(vec![4; PHOTO]).await;
    assert_eq!(authorize(&guest, 100_000).await, (StatusCode::FORBIDDEN, Some("session_bytes_exceeded".into())));
}
