//! A host who removes a guest and blocks their address ends every session
//! of the event opened from that address, not only the one removed: the
//! same client's second session (another browser, or a second join of a
//! hostile script) can do nothing more either, and its uploads not yet
//! saved end. The block is the event's: the same address still uploads to
//! another event, and other addresses go on.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::limits::{client_from, join_from};
use support::media::{host_list, upload_as};
use support::{TestServer, problem};
use uuid::Uuid;

#[tokio::test]
async fn every_session_from_a_blocked_address_ends() {
    let server = TestServer::start().await;
    let event = server.create_event("blocked", 1_000_000, &["image/*"], "required").await;
    let other_event = server.create_event("elsewhere", 1_000_000, &["image/*"], "required").await;
    let address = client_from("127.0.0.6");
    let removed = join_from(&server, &address, &event).await.unwrap();
    let second = join_from(&server, &address, &event).await.unwrap();
    let elsewhere = join_from(&server, &address, &other_event).await.unwrap();
    let honest = join_from(&server, &client_from("127.0.0.7"), &event).await.unwrap();

    let shared = upload_as(&removed, "image/png", "shared.png", &[1; 64]).await;
    let live = Uuid::new_v4();
    let answer = second.authorize(live, 64).await;
    let guest =
        host_list(&honest).await.iter().find(|m| m["id"] == shared.id.to_string()).unwrap()["guest"].to_string();

    let r = server
        .call(
            Method::POST,
            &format!("/v1/events/blocked/guests/{guest}/revoke"),
            Some(&event.host_token),
            Some(json!({"block_address": true})),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v, json!({"ended_uploads": 1, "address_blocked": true}), "the second session's upload ended too");

    // The second session of the blocked address opens nothing more.
    for r in [
        second.get(live).await,
        second
            .authorize_raw(json!({"id": Uuid::new_v4(), "filename": "x.png", "size": 3, "content_type": "image/png"}))
            .await,
        second.confirm(live, 64).await,
    ] {
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("session_revoked")));
    }
    if server.state.local_store.as_deref().is_some() {
        assert_eq!(server.put(answer.put().unwrap(), vec![2; 64]).await.status(), StatusCode::GONE);
    }
    // The block is this event's: the same address uploads to another one.
    upload_as(&elsewhere, "image/png", "elsewhere.png", &[5; 64]).await;
    upload_as(&honest, "image/png", "honest.png", &[3; 64]).await;
}
