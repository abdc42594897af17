//! The sweeper expires attempts that were never confirmed and deletes their
//! objects, and never leaves a media row without its object — not even
//! while a confirm is in flight.

mod support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use support::{GatedObjects, Options, TestServer, problem};
use uuid::Uuid;

const HOUR: i64 = 3_600_000;

#[tokio::test]
async fn expired_attempts_are_marked_and_their_objects_deleted() {
    let server = TestServer::start_with(Options { attempt_ttl: Some(Duration::from_secs(3600)), url_ttl: Some(Duration::from_secs(600)), ..Default::default() }).await;
    let guest = server.guest().await;
    let (stale, fresh, done) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let a = guest.authorize(stale, 4).await;
    assert_eq!(server.put(a.upload.as_ref().unwrap(), b"old!".to_vec()).await.status(), StatusCode::OK);
    let (done_id, _) = guest.upload(b"kept".to_vec()).await;
    let _ = done;

    server.clock.advance(HOUR / 2);
    guest.authorize(fresh, 4).await;
    server.clock.advance(HOUR / 2 + 1);
    server.sweep().await;

    let status = guest.status(&[stale, fresh, done_id]).await;
    assert_eq!(status["results"][0]["state"], "expired");
    assert_eq!(status["results"][1]["state"], "authorized", "not yet due");
    assert_eq!(status["results"][2]["state"], "confirmed", "confirmed attempts never expire");
    assert!(server.state.objects.head(&a.object_key).await.unwrap().is_none(), "the expired attempt's object is deleted");

    let (code, body) = problem(guest.confirm(stale, 4).await).await;
    assert_eq!((code, body["code"].as_str()), (StatusCode::GONE, Some("expired")));
    assert_eq!(server.counts().await.1, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_confirm_held_mid_transaction_is_never_left_without_its_object() {
    let entered = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (e2, r2) = (entered.clone(), release.clone());
    let server = TestServer::start_with(Options {
        attempt_ttl: Some(Duration::from_secs(3600)),
        url_ttl: Some(Duration::from_secs(600)),
        wrap_objects: Some(Box::new(move |inner| Arc::new(GatedObjects { inner, entered: e2, release: r2 }))),
        ..Default::default()
    })
    .await;
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    let a = guest.authorize(id, 4).await;
    assert_eq!(server.put(a.upload.as_ref().unwrap(), b"race".to_vec()).await.status(), StatusCode::OK);
    // Just before expiry, a confirm starts and stops inside its transaction
    // (at the object HEAD, holding the attempt's lock).
    server.clock.advance(HOUR - 1000);
    let confirm = {
        let session = guest.session.clone();
        let http = server.http.clone();
        let url = server.url(&format!("/v1/attempts/{id}/confirm"));
        tokio::spawn(async move {
            http.post(url)
                .bearer_auth(session)
                .header("Idempotency-Key", id.to_string())
                .json(&serde_json::json!({"size": 4, "content_type": "image/png"}))
                .send()
                .await
                .unwrap()
                .status()
        })
    };
    entered.notified().await;
    // Now the attempt is past its TTL and the sweeper runs.
    server.clock.advance(2000);
    let sweeper = {
        let state = server.state.clone();
        tokio::spawn(async move { upload_once_server::sweeper::sweep_once(&state).await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!sweeper.is_finished(), "the sweeper waits for the confirm's lock");
    release.add_permits(1000);
    let confirm_status = confirm.await.unwrap();
    let report = sweeper.await.unwrap();

    let (_, media_rows) = server.counts().await;
    let object = server.stored_keys().await;
    match confirm_status {
        StatusCode::OK => {
            assert_eq!(report.expired, 0, "a confirmed attempt is not expired");
            assert_eq!(media_rows, 1);
            assert_eq!(object, vec![a.object_key.clone()], "the confirmed object is kept");
        }
        StatusCode::GONE => {
            assert_eq!(media_rows, 0);
            assert!(object.is_empty());
        }
        other => panic!("unexpected confirm status {other}"),
    }
    // Either way: every media row has its object.
    assert!(media_rows == 0 || !object.is_empty());
}
