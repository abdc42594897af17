//! A client that hangs up at the wrong moment never leaves the database
//! unable to take writes: the request's work runs to its end without it,
//! and a connection that comes back inside a transaction is closed, never
//! handed to the next request.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::Connection;
use support::{LockHolder, Options, TestServer, fresh_database_url, is_postgres, until};
use upload_once_server::store::dialect::Dialect;
use upload_once_server::store::sql::SqlStore;
use uuid::Uuid;

/// A bound on a hang, not a measure of speed.
const LIMIT: Duration = Duration::from_secs(20);

/// Uploads `n` photos at once, each from its own guest, and checks every
/// step succeeded on its first try.
async fn uploads_succeed_first_time(server: &TestServer, n: usize) {
    let guests = futures_util::future::join_all((0..n).map(|_| server.guest())).await;
    let uploads = guests.iter().map(|guest| async move {
        let id = Uuid::new_v4();
        let authorize = guest
            .authorize_raw(json!({"id": id, "filename": "photo.png", "size": 5, "content_type": "image/png"}))
            .await;
        assert_eq!(authorize.status(), StatusCode::CREATED, "authorize: {}", authorize.text().await.unwrap());
        let attempt: upload_once_core::wire::AttemptResponse = authorize.json().await.unwrap();
        assert_eq!(server.put(attempt.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
        let confirm = guest.confirm(id, 5).await;
        assert_eq!(confirm.status(), StatusCode::OK, "confirm: {}", confirm.text().await.unwrap());
    });
    futures_util::future::join_all(uploads).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_confirm_whose_client_hangs_up_while_it_waits_for_the_lock_finishes_and_the_next_writes_succeed() {
    let server = TestServer::start().await;
    let database_url = server.database_url.clone().expect("the test server's database");
    let guest = server.guest().await;
    let (id, _) = guest.authorize_and_put(b"hello").await;

    // Hold the lock, so the confirm's transaction waits for it.
    let holder = LockHolder::hold(&database_url).await;
    let client = guest.send_confirm_by_hand(id, 5).await;
    let ops = server.state.ops.clone();
    until("the confirm's handler to run", LIMIT, || ops.requests_in_flight() == 1).await;

    // The client hangs up while the confirm waits; the server notices.
    drop(client);
    until("the server to see the hang-up", LIMIT, || ops.hangups() == 1).await;
    assert_eq!(ops.requests_in_flight(), 1, "the hung-up confirm is still at work");

    holder.release().await;
    until("the hung-up confirm to end", LIMIT, || ops.requests_in_flight() == 0).await;
    let status = guest.status(&[id]).await;
    assert_eq!(status["results"][0]["state"], "confirmed", "the work the client left still committed: {status}");
    assert_eq!(server.counts().await.1, 1, "one media row");

    // More writers than the pool has connections, each succeeding first time.
    uploads_succeed_first_time(&server, 24).await;
    assert_eq!(server.counts().await.1, 25);
    assert_eq!(server.state.records.dirty_connections_discarded(), 0, "no connection was left inside a transaction");
}

/// Does what a request future dropped between `BEGIN` and its
/// `Transaction` would do: gives a connection back to the pool inside a
/// transaction that holds the write lock (SQLite's, or an exclusive lock on
/// PostgreSQL's `attempts`), with nothing left to end it.
async fn leave_a_transaction_open(store: &SqlStore) {
    let mut conn = store.pool().acquire().await.unwrap();
    let mut tx = conn.begin_with(store.dialect().begin_write()).await.unwrap();
    if store.dialect() == Dialect::Postgres {
        sqlx::query("LOCK TABLE attempts IN EXCLUSIVE MODE").execute(&mut *tx).await.unwrap();
    }
    std::mem::forget(tx);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_connection_given_back_inside_a_transaction_is_closed_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    assert_eq!(url.starts_with("postgres"), is_postgres());
    let store = SqlStore::open(&url).await.unwrap();
    let server = TestServer::start_with(Options { records: Some(Arc::new(store.clone())), ..Options::default() }).await;

    leave_a_transaction_open(&store).await;

    uploads_succeed_first_time(&server, 24).await;
    assert_eq!(server.counts().await.1, 24, "every write committed");
    assert_eq!(
        server.state.records.dirty_connections_discarded(),
        1,
        "the connection left inside a transaction was closed"
    );
    let ready = server.http.get(server.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
}
