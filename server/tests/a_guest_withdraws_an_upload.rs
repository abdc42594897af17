//! `DELETE /v1/attempts/{id}`: a guest withdraws one of their uploads, and
//! it ends on the server, not only on the page.
//! - Not confirmed yet: the attempt is rejected with `withdrawn`, its URL
//!   takes no more bytes, its reserved bytes are freed at once (another
//!   upload fits in the event again), a multipart upload is aborted, and a
//!   confirm or renew answers `410 withdrawn`.
//! - Confirmed: its media is taken down like a rejected one, leaves the
//!   wall and the host's list, and its objects are deleted by the sweeper.
//! - Again: `204`. Another session's attempt: `404`, like an unknown id.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::json;
use support::media::{host_list, open_event, upload_as, wall, wall_item};
use support::multipart;
use support::{Guest, Options, TestServer, problem};
use uuid::Uuid;

async fn withdraw(guest: &Guest<'_>, id: Uuid) -> StatusCode {
    guest.server.call(Method::DELETE, &format!("/v1/attempts/{id}"), Some(&guest.session), None).await.status()
}

#[tokio::test]
async fn an_unconfirmed_upload_withdrawn_frees_its_bytes_and_its_url() {
    let server = TestServer::start_with(Options {
        configure: Some(Box::new(|c| c.limits.max_bytes_per_event = 1000)),
        ..Default::default()
    })
    .await;
    let guest = server.guest().await;
    let bytes = vec![7u8; 800];
    let first = Uuid::new_v4();
    let a = guest.authorize(first, 800).await;
    // The event is full while it is reserved.
    let second = Uuid::new_v4();
    let r = guest
        .authorize_raw(json!({"id": second, "filename": "b.jpg", "size": 800, "content_type": "image/jpeg"}))
        .await;
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("event_bytes_exceeded")));

    assert_eq!(withdraw(&guest, first).await, StatusCode::NO_CONTENT);
    // Its bytes are free: the other file fits now.
    let r = guest
        .authorize_raw(json!({"id": second, "filename": "b.jpg", "size": 800, "content_type": "image/jpeg"}))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED, "the withdrawn reservation no longer counts");
    // Its URL takes no more bytes (the embedded store checks; a presigned
    // S3 URL cannot be revoked, and what it lands is never confirmed).
    if server.state.local_store.as_deref().is_some() {
        let (status, p) = problem(server.put(a.put().unwrap(), bytes.clone()).await).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("withdrawn")));
    }
    let (status, p) = problem(guest.confirm(first, 800).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("withdrawn")));
    let (status, p) = problem(guest.renew(first).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("withdrawn")));
    let answer = guest.status(&[first]).await;
    assert_eq!(answer["results"][0]["state"], "rejected", "{answer}");
    assert_eq!(answer["results"][0]["code"], "withdrawn", "{answer}");

    // Again: nothing more. Another session: as if it did not exist.
    assert_eq!(withdraw(&guest, first).await, StatusCode::NO_CONTENT);
    let stranger = server.guest().await;
    assert_eq!(withdraw(&stranger, second).await, StatusCode::NOT_FOUND);
    assert_eq!(withdraw(&stranger, Uuid::new_v4()).await, StatusCode::NOT_FOUND);
    let r = server.call(Method::DELETE, &format!("/v1/attempts/{second}"), None, None).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_withdrawn_upload_in_parts_is_aborted() {
    let server = TestServer::start_with(multipart::options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, _, plan) = guest.authorize_file(3).await;
    guest.send_parts(id, &bytes, &plan, &[1]).await;
    let signed = guest.sign(id, &bytes, &plan, &[2]).await;

    assert_eq!(withdraw(&guest, id).await, StatusCode::NO_CONTENT);
    // The upload is aborted: a part signed before takes nothing (refused
    // with a 4xx, or, by an S3 store, before its body was read).
    let upload = &signed[0].upload;
    let mut put = server.http.put(&upload.url).body(multipart::part(&bytes, &plan, 2));
    for (k, v) in &upload.headers {
        put = put.header(k, v);
    }
    if let Ok(r) = put.send().await {
        if !support::store_lacks("a part after the withdrawal", support::StoreCheck::NoSuchUploadForParts) {
            assert!(r.status().is_client_error(), "a part after the withdrawal: {}", r.status());
        }
    }
    assert_eq!(guest.sign_raw(id, json!({"parts": [{"number": 3}]})).await.status(), StatusCode::GONE);
}

#[tokio::test]
async fn a_confirmed_upload_withdrawn_leaves_the_wall_and_the_hosts_list() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let kept = upload_as(&guest, "image/png", "kept.png", &[1; 64]).await;
    let gone = upload_as(&guest, "image/png", "gone.png", &[2; 64]).await;
    let on_wall =
        |w: &serde_json::Value, id: Uuid| w["items"].as_array().unwrap().iter().any(|i| i["id"] == id.to_string());
    // Approved on upload (no moderation), on the wall once its renditions
    // are settled.
    wall_item(&guest, kept.id).await;
    wall_item(&guest, gone.id).await;
    let url =
        server.state.links.media_url(server.state.records.media(gone.id).await.unwrap().unwrap().event_id, gone.id);

    assert_eq!(withdraw(&guest, gone.attempt_id).await, StatusCode::NO_CONTENT);
    let w = wall(&guest).await;
    assert!(!on_wall(&w, gone.id) && on_wall(&w, kept.id), "{w}");
    let listed: Vec<String> = host_list(&guest).await.iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(listed, vec![kept.id.to_string()], "the host's list");
    let (status, p) = problem(server.http.get(&url).send().await.unwrap()).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("removed")));
    // Its objects go with the next sweep; the other upload's stay.
    server.sweep().await;
    assert!(server.state.objects.head(&gone.object_key).await.unwrap().is_none(), "the original is deleted");
    assert!(server.state.objects.head(&kept.object_key).await.unwrap().is_some());
    assert_eq!(withdraw(&guest, gone.attempt_id).await, StatusCode::NO_CONTENT, "again: nothing more");
}
