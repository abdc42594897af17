//! Hostile guest: reservations never uploaded. An authorized attempt's
//! bytes count against its session's and its event's quotas only while a
//! URL of it can still land bytes (`--url-ttl` and the PUT grace), not for
//! the attempt's seven days: a renew, a part signing or bytes received move
//! the reservation on. So reservations nobody uploads cannot hold an event
//! full, while an upload that is going on keeps its place.

use std::time::Duration;

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use support::{Guest, Options, TestServer, problem};
use uuid::Uuid;

const URL_TTL: Duration = Duration::from_secs(15 * 60);
const GRACE: Duration = Duration::from_secs(60);

async fn reserve(guest: &Guest<'_>, size: u64) -> StatusCode {
    let body = json!({"id": Uuid::new_v4(), "filename": "a.jpg", "size": size, "content_type": "image/jpeg"});
    let r = guest.authorize_raw(body).await;
    let status = r.status();
    if status != StatusCode::CREATED {
        let (_, p) = problem(r).await;
        assert_eq!(p["code"], "event_bytes_exceeded", "{p}");
    }
    status
}

/// A server whose events hold 1000 bytes, with the URL TTL and grace above.
async fn event_of_1000_bytes() -> TestServer {
    TestServer::start_with(Options {
        url_ttl: Some(URL_TTL),
        configure: Some(Box::new(|c| {
            c.limits.max_bytes_per_event = 1000;
            c.limits.put_expiry_grace = GRACE;
        })),
        ..Default::default()
    })
    .await
}

#[tokio::test]
async fn a_reservation_nobody_uploads_stops_holding_the_event_once_its_url_is_over() {
    let server = event_of_1000_bytes().await;
    let hostile = server.guest().await;
    let honest = server.guest_of(&hostile.event).await;

    // The hostile guest reserves the whole event and sends nothing.
    assert_eq!(reserve(&hostile, 1000).await, StatusCode::CREATED);
    assert_eq!(reserve(&honest, 10).await, StatusCode::FORBIDDEN, "the event is full while the URL may land bytes");

    // Once no URL of it can land bytes, it no longer holds the event.
    server.clock.advance((URL_TTL + GRACE).as_millis() as i64 + 1000);
    assert_eq!(reserve(&honest, 10).await, StatusCode::CREATED, "the reservation stopped counting");
}

#[tokio::test]
async fn an_upload_that_goes_on_keeps_its_reservation() {
    let server = event_of_1000_bytes().await;
    let slow = server.guest().await;
    let other = server.guest_of(&slow.event).await;
    let id = Uuid::new_v4();
    slow.authorize(id, 1000).await;

    // Near the URL's end the client renews it: the reservation goes on.
    server.clock.advance((URL_TTL - Duration::from_secs(60)).as_millis() as i64);
    assert_eq!(slow.renew(id).await.status(), StatusCode::OK);
    server.clock.advance((GRACE + Duration::from_secs(120)).as_millis() as i64);
    assert_eq!(reserve(&other, 10).await, StatusCode::FORBIDDEN, "renewed: still reserved");

    // Its bytes arrive (the embedded store sees them) and it is confirmed:
    // it holds the event for good.
    let a: upload_once_core::wire::AttemptResponse = slow.renew(id).await.json().await.unwrap();
    assert_eq!(server.put(a.put().unwrap(), vec![3; 1000]).await.status(), StatusCode::OK);
    assert_eq!(slow.confirm(id, 1000).await.status(), StatusCode::OK);
    server.clock.advance(2 * (URL_TTL + GRACE).as_millis() as i64);
    assert_eq!(reserve(&other, 10).await, StatusCode::FORBIDDEN, "confirmed bytes count for good");
}
