//! While the database does not take writes, the readiness check fails and
//! says why, writes are answered `503 database_unavailable` with
//! `Retry-After` (never a `500`), and the log says so once, not once per
//! request; when it takes writes again, the server says so, once.

mod support;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use support::{CapturedLog, LockHolder, TestServer, problem, until};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readiness_fails_while_writes_cannot_get_the_lock_and_the_outage_is_logged_once() {
    let log = CapturedLog::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .try_init()
        .expect("this test binary's only subscriber");

    let server = TestServer::start().await;
    let database_url = server.database_url.clone().unwrap();
    let guest = server.guest().await;
    assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), StatusCode::OK);

    // Another process holds the write lock.
    let holder = LockHolder::hold(&database_url).await;

    // A fresh probe (one runs at most once a second), asked by the admin (who alone is told why).
    server.clock.advance(upload_once_server::ops::READINESS_TTL_MS);
    let r = server.http.get(server.url("/readyz")).bearer_auth(support::ADMIN).send().await.unwrap();
    let (status, body) = problem(r).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["code"], "database_unavailable");
    assert!(body["detail"].as_str().unwrap().contains("does not take writes"), "{body}");

    let writes = (0..10).map(|_| async {
        let r = guest
            .authorize_raw(json!({"id": Uuid::new_v4(), "filename": "a.png", "size": 3, "content_type": "image/png"}))
            .await;
        assert!(r.headers().contains_key("retry-after"), "a retryable answer says when");
        problem(r).await
    });
    for (status, body) in futures_util::future::join_all(writes).await {
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["code"], "database_unavailable");
        assert_eq!(body["retryable"], true);
    }
    assert!(server.state.ops.database_outage().is_some());

    holder.release().await;
    let ops = server.state.ops.clone();
    until("the server to find the database taking writes again", Duration::from_secs(20), || {
        ops.database_outage().is_none()
    })
    .await;
    server.clock.advance(upload_once_server::ops::READINESS_TTL_MS);
    assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), StatusCode::OK);
    guest.upload(b"hello".to_vec()).await;

    assert_eq!(log.lines_with("the database does not take writes"), 1, "the outage is logged once");
    assert_eq!(log.lines_with("the database takes writes again"), 1, "and its end once");
    assert_eq!(log.lines_with("ERROR"), 1, "and nothing else as an error");
}
