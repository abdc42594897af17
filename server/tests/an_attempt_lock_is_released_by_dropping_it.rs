//! An attempt's row lock is its own guard: a handler that returns early
//! (an error, an answer that changes nothing) just drops it. Dropping it
//! rolls back what was written under it, releases the lock, and gives its
//! database connection back clean, so the pool keeps it.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use support::TestServer;

/// A bound on a hang, not a measure of speed.
const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_lock_rolls_back_and_keeps_its_connection() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let (id, attempt) = guest.authorize_and_put(b"hello").await;
    let records = server.state.records.clone();
    let row = records.attempt_by_object_key(&attempt.object_key).await.unwrap().expect("the attempt");

    let mut lock = records.lock_attempt(row.session_id, id).await.unwrap().expect("locked");
    lock.set_upload_id("written-under-the-lock").await.unwrap();
    drop(lock);

    // Taking the lock again waits for the first one to be released.
    let again = tokio::time::timeout(LIMIT, records.lock_attempt(row.session_id, id))
        .await
        .expect("the dropped lock was released")
        .unwrap()
        .expect("locked again");
    assert_eq!(again.attempt().upload_id, None, "what was written under the dropped lock was rolled back");
    drop(again);
    assert_eq!(records.dirty_connections_discarded(), 0, "the connections came back clean and were kept");

    // And the attempt goes on as if nothing happened.
    let confirm = guest.confirm(id, 5).await;
    assert_eq!(confirm.status(), StatusCode::OK, "confirm: {}", confirm.text().await.unwrap());
}
