//! The host removes a guest (`POST /v1/events/{slug}/guests/{guest}/revoke`,
//! the `guest` of an item in the host's list): that guest's session opens
//! nothing more (`403 session_revoked`), its upload not yet saved ends (its
//! URL takes no more bytes), and with `block_address` no session is opened
//! from its address again (`403 address_blocked`). Other guests, behind
//! other addresses, go on; what the removed guest already shared stays for
//! the host to reject. Only this event's host may do it.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::limits::{client_from, join_from};
use support::media::{host_list, upload_as};
use support::{TestServer, problem};
use uuid::Uuid;

async fn revoke(server: &TestServer, slug: &str, token: &str, guest: &str, block: bool) -> reqwest::Response {
    server
        .call(
            Method::POST,
            &format!("/v1/events/{slug}/guests/{guest}/revoke"),
            Some(token),
            Some(json!({"block_address": block})),
        )
        .await
}

#[tokio::test]
async fn a_removed_guest_can_do_nothing_more_and_its_address_is_shut_out() {
    let server = TestServer::start().await;
    let event = server.create_event("party", 1_000_000, &["image/*"], "required").await;
    let slug = event.event.slug.clone();
    let hostile_address = client_from("127.0.0.2");
    let hostile = join_from(&server, &hostile_address, &event).await.unwrap();
    let honest = join_from(&server, &client_from("127.0.0.3"), &event).await.unwrap();

    let shared = upload_as(&hostile, "image/png", "shared.png", &[1; 64]).await;
    let live = Uuid::new_v4();
    let answer = hostile.authorize(live, 64).await;
    let listed = host_list(&hostile).await;
    let guest = listed.iter().find(|m| m["id"] == shared.id.to_string()).unwrap()["guest"].to_string();

    // Only this event's host.
    let other = server.create_event("other", 1_000_000, &["image/*"], "required").await;
    assert_eq!(revoke(&server, &slug, &other.host_token, &guest, true).await.status(), StatusCode::FORBIDDEN);
    assert_eq!(revoke(&server, &slug, &hostile.session, &guest, true).await.status(), StatusCode::FORBIDDEN);
    assert_eq!(revoke(&server, "other", &other.host_token, &guest, true).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(revoke(&server, &slug, &event.host_token, "999999", true).await.status(), StatusCode::NOT_FOUND);

    let r = revoke(&server, &slug, &event.host_token, &guest, true).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v, json!({"ended_uploads": 1, "address_blocked": true}));

    // Its session opens nothing more.
    for r in [
        hostile.get(live).await,
        hostile
            .authorize_raw(json!({"id": Uuid::new_v4(), "filename": "x.png", "size": 3, "content_type": "image/png"}))
            .await,
        hostile.confirm(live, 64).await,
    ] {
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("session_revoked")));
    }
    // Its live upload's URL takes nothing (the embedded store checks).
    if server.state.local_store.as_deref().is_some() {
        assert_eq!(server.put(answer.put().unwrap(), vec![2; 64]).await.status(), StatusCode::GONE);
    }
    // Its address is shut out; another address still joins and uploads.
    assert_eq!(join_from(&server, &hostile_address, &event).await.err(), Some("403 address_blocked".into()));
    let newcomer = join_from(&server, &client_from("127.0.0.4"), &event).await.unwrap();
    upload_as(&newcomer, "image/png", "new.png", &[4; 64]).await;
    upload_as(&honest, "image/png", "honest.png", &[3; 64]).await;
    // What it shared stays for the host to reject.
    assert!(host_list(&honest).await.iter().any(|m| m["id"] == shared.id.to_string()));
    // Again: nothing more to end.
    let v: Value = revoke(&server, &slug, &event.host_token, &guest, false).await.json().await.unwrap();
    assert_eq!(v["ended_uploads"], 0);
}
