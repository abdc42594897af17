//! Hostile guest: a storm of live wall streams (`/wall/live`, Server-Sent
//! Events). One client address holds at most `--max-live-per-client` of
//! them and one event at most `--max-live-per-event`; past either, `429
//! rate_limited`. A stream gives its place back when it ends. Meanwhile a
//! wall of another event opens and is told of a new photo as usual.

use std::time::Duration;

use crate::support;

use futures_util::StreamExt;
use reqwest::{Client, StatusCode};
use serde_json::Value;
use support::limits::{client_from, with_limits};
use support::media::{open_event, upload_as};
use support::{Guest, TestServer};

const PER_CLIENT: u64 = 3;
const PER_EVENT: u64 = 5;

async fn open(client: &Client, guest: &Guest<'_>) -> reqwest::Response {
    let url = guest.server.url(&format!("/v1/events/{}/wall/live?code={}", guest.slug(), guest.event.guest_code));
    client.get(url).header("accept", "text/event-stream").send().await.unwrap()
}

async fn refused(client: &Client, guest: &Guest<'_>, why: &str) {
    let r = open(client, guest).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS, "{why}");
    assert_eq!(r.headers()["retry-after"], "1");
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["code"], "rate_limited", "{why}: {p}");
}

#[tokio::test]
async fn a_storm_of_live_walls_is_held_to_its_caps_and_another_events_wall_still_listens() {
    let server = TestServer::start_with(with_limits(|l| {
        l.max_live_per_client = PER_CLIENT;
        l.max_live_per_event = PER_EVENT;
    }))
    .await;
    // The honest wall's photo goes onto the wall once its renditions are
    // settled.
    let _workers = upload_once_server::services::renditions::spawn(&server.state);
    let target = open_event(&server).await;

    // One address: its cap, then 429.
    let hostile = client_from("127.0.0.2");
    let mut held = Vec::new();
    for _ in 0..PER_CLIENT {
        let r = open(&hostile, &target).await;
        assert_eq!(r.status(), StatusCode::OK);
        held.push(r);
    }
    refused(&hostile, &target, "past the address's cap").await;

    // Other addresses fill the event's cap, then the event is full.
    let second = client_from("127.0.0.3");
    for _ in PER_CLIENT..PER_EVENT {
        let r = open(&second, &target).await;
        assert_eq!(r.status(), StatusCode::OK);
        held.push(r);
    }
    refused(&client_from("127.0.0.4"), &target, "past the event's cap").await;

    // A wall of another event, from yet another address, listens as usual.
    let honest = open_event(&server).await;
    let r = open(&client_from("127.0.0.5"), &honest).await;
    assert_eq!(r.status(), StatusCode::OK);
    let mut body = r.bytes_stream();
    let photo = upload_as(&honest, "image/png", "p.png", &[7; 40]).await;
    let told = tokio::time::timeout(Duration::from_secs(10), async {
        let mut text = String::new();
        while let Some(chunk) = body.next().await {
            text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
            if text.contains(&photo.id.to_string()) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(told, Ok(true), "the honest wall is told of the new photo");

    // A stream that ends gives its place back (the server sees the closed
    // connection; bounded, not waited out).
    drop(held.remove(0));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = open(&hostile, &target).await;
        if r.status() == StatusCode::OK {
            break;
        }
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(tokio::time::Instant::now() < deadline, "the ended stream's place was not given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
