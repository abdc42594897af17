//! The host's token reads the event's guest code (`GET
//! /v1/events/{slug}/invite`), so the host page can show the guest link
//! and its QR code from the host link alone; no other credential does.

use crate::support;

use reqwest::StatusCode;
use serde_json::Value;
use support::{TestServer, problem};

#[tokio::test]
async fn the_host_token_and_only_it_reads_the_guest_code() {
    let server = TestServer::start().await;
    let event = server.create_event("invite-party", 1_000_000, &["image/*"], "required").await;
    let other = server.create_event("other-party", 1_000_000, &["image/*"], "required").await;
    let guest = server.guest_of(&event).await;
    let url = server.url("/v1/events/invite-party/invite");

    let r = server.http.get(&url).bearer_auth(&event.host_token).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["guest_code"], event.guest_code);
    assert_eq!(body["event"]["slug"], "invite-party");
    assert_eq!(body["event"]["title"], event.event.title);

    assert_eq!(problem(server.http.get(&url).send().await.unwrap()).await.1["code"], "unauthorized");
    for token in [&guest.session, &event.wall_token, &other.host_token] {
        let r = server.http.get(&url).bearer_auth(token).send().await.unwrap();
        assert_eq!(problem(r).await.1["code"], "forbidden");
    }
    let r =
        server.http.get(server.url("/v1/events/no-party/invite")).bearer_auth(&event.host_token).send().await.unwrap();
    assert_eq!(problem(r).await.1["code"], "not_found");
}
