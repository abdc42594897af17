//! Confirm is create-or-return: however many times and however
//! concurrently it is called, one attempt makes one media record.

use crate::support;

use reqwest::StatusCode;
use support::{TestServer, problem};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_confirms_make_one_media_row() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let (id, _) = guest.authorize_and_put(b"hello").await;

    let results = guest.confirm_concurrently(id, serde_json::json!({"size": 5, "content_type": "image/png"}), 50).await;
    let media_ids: std::collections::BTreeSet<String> = results
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, StatusCode::OK, "{body}");
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            v["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(media_ids.len(), 1, "all 50 answers carry the same media id");
    assert_eq!(server.counts().await.1, 1, "exactly one media row");
}

#[tokio::test]
async fn a_replay_after_success_returns_the_identical_body() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let (id, _) = guest.upload(b"12345".to_vec()).await;
    let first = guest.confirm(id, 5).await;
    let (s1, b1) = (first.status(), first.text().await.unwrap());
    let second = guest.confirm(id, 5).await;
    let (s2, b2) = (second.status(), second.text().await.unwrap());
    assert_eq!((s1, &b1), (s2, &b2));
    assert_eq!(server.counts().await.1, 1);
}

#[tokio::test]
async fn confirm_before_the_object_exists_is_409_then_200_after_the_put() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    let attempt = guest.authorize(id, 3).await;

    let (status, body) = problem(guest.confirm(id, 3).await).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["code"], "object_missing");
    assert_eq!(body["retryable"], true);
    assert_eq!(guest.status(&[id]).await["results"][0]["state"], "authorized", "the attempt stays authorized");

    assert_eq!(server.put(attempt.put().unwrap(), b"abc".to_vec()).await.status(), StatusCode::OK);
    let r = guest.confirm(id, 3).await;
    assert_eq!(r.status(), StatusCode::OK);
    let media: serde_json::Value = r.json().await.unwrap();
    assert_eq!(media["attempt_id"], id.to_string());
    assert_eq!(media["moderation"], "pending");
    assert_eq!(server.counts().await.1, 1);
}

#[tokio::test]
async fn confirm_needs_the_idempotency_key_and_it_must_be_the_attempt_id() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    guest.authorize(id, 3).await;
    let url = server.url(&format!("/v1/attempts/{id}/confirm"));
    let body = serde_json::json!({"size": 3, "content_type": "image/png"});

    let r = server.http.post(&url).bearer_auth(&guest.session).json(&body).send().await.unwrap();
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::BAD_REQUEST, Some("idempotency_key_missing")));

    let r = server
        .http
        .post(&url)
        .bearer_auth(&guest.session)
        .header("Idempotency-Key", Uuid::new_v4().to_string())
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::BAD_REQUEST, Some("idempotency_key_mismatch")));
}

#[tokio::test]
async fn moderation_none_confirms_straight_onto_the_wall() {
    let server = TestServer::start().await;
    let event = server.create_event("open-party", 1000, &["image/*"], "none").await;
    let session = server.join(&event).await;
    let guest = support::Guest { server: &server, event, session };
    let (_, media) = guest.upload(b"xyz".to_vec()).await;
    assert_eq!(media.moderation, upload_once_core::wire::Moderation::Approved);
}
