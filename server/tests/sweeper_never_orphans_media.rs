//! The sweeper expires attempts that were never confirmed and deletes their
//! objects, and never leaves a media row without its object — not even
//! while a confirm is in flight.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use support::{ObservedRecords, Options, TestServer, problem};
use upload_once_server::Result;
use upload_once_server::storage::ObjectStore;
use upload_once_server::storage::intercept::{Call, Intercepted, Interceptor, Operation};
use uuid::Uuid;

const HOUR: i64 = 3_600_000;

#[tokio::test]
async fn expired_attempts_are_marked_and_their_objects_deleted() {
    let server = TestServer::start_with(Options::attempts_of_an_hour()).await;
    let guest = server.guest().await;
    let (stale, fresh) = (Uuid::new_v4(), Uuid::new_v4());
    let a = guest.authorize(stale, 4).await;
    assert_eq!(server.put(a.put().unwrap(), b"old!".to_vec()).await.status(), StatusCode::OK);
    let (done_id, _) = guest.upload(b"kept".to_vec()).await;

    server.clock.advance(HOUR / 2);
    guest.authorize(fresh, 4).await;
    server.clock.advance(HOUR / 2 + 1);
    server.sweep().await;

    let status = guest.status(&[stale, fresh, done_id]).await;
    assert_eq!(status["results"][0]["state"], "expired");
    assert_eq!(status["results"][1]["state"], "authorized", "not yet due");
    assert_eq!(status["results"][2]["state"], "confirmed", "confirmed attempts never expire");
    assert!(
        server.state.objects.head(&a.object_key).await.unwrap().is_none(),
        "the expired attempt's object is deleted"
    );

    let (code, body) = problem(guest.confirm(stale, 4).await).await;
    assert_eq!((code, body["code"].as_str()), (StatusCode::GONE, Some("expired")));
    assert_eq!(server.counts().await.1, 1);
}

/// The race the sweeper must lose: it finds an attempt due while a
/// confirm of it is inside its transaction (held by the test hooks, with
/// the attempt's lock, past its expiry check). The confirm wins; the
/// sweeper, re-reading under the same lock, leaves the attempt and its
/// object alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_confirm_held_mid_transaction_wins_over_the_sweeper_and_keeps_its_object() {
    let (due_tx, mut due_rx) = tokio::sync::mpsc::unbounded_channel();
    let server = TestServer::start_with(Options {
        attempt_ttl: Some(Duration::from_secs(3600)),
        url_ttl: Some(Duration::from_secs(600)),
        wrap_records: Some(Box::new(move |inner| Arc::new(ObservedRecords { inner, due: due_tx }))),
        configure: Some(Box::new(|c| c.test_hooks = true)),
        ..Default::default()
    })
    .await;
    let gate = server.state.test_hooks.as_ref().unwrap().gate_confirms();
    let guest = server.guest().await;
    let (id, a) = guest.authorize_and_put(b"race").await;
    let row_id = server.state.records.attempt_by_object_key(&a.object_key).await.unwrap().unwrap().row_id;

    // Just before expiry, a confirm starts and stops inside its transaction
    // (holding the attempt's lock).
    server.clock.advance(HOUR - 1000);
    let confirm = spawn_confirm(&server, &guest.session, id);
    gate.entered.notified().await;

    // Now the attempt is past its TTL, and the sweeper finds it due while
    // the confirm still holds it; next it waits for the confirm's lock.
    server.clock.advance(2000);
    let sweeper = {
        let state = server.state.clone();
        tokio::spawn(async move { upload_once_server::services::sweeper::sweep_once(&state).await.unwrap() })
    };
    let due = due_rx.recv().await.expect("the sweeper lists what is due");
    assert_eq!(due, vec![row_id], "the sweeper found the attempt due while the confirm was inside its transaction");

    gate.release.add_permits(1000);
    assert_eq!(confirm.await.unwrap(), StatusCode::OK, "the confirm that held the lock wins");
    let report = sweeper.await.unwrap();
    assert_eq!(report.expired, 0, "under the lock the sweeper saw the attempt confirmed, and left it");
    assert_eq!(server.counts().await.1, 1, "one media row");
    assert_eq!(server.stored_keys().await, vec![a.object_key.clone()], "the confirmed object is kept");
    assert_eq!(guest.status(&[id]).await["results"][0]["state"], "confirmed");

    // Later passes leave it alone too: a confirmed attempt is never due.
    server.clock.advance(HOUR);
    server.sweep().await;
    assert_eq!(due_rx.recv().await, Some(vec![]), "a confirmed attempt is not listed as due");
    assert_eq!(server.stored_keys().await, vec![a.object_key.clone()]);
}

/// A confirm asks the store before it takes the attempt's lock. Held there
/// (a slow HEAD that saw the object), it holds no lock, so the sweeper
/// expires the attempt and deletes its object meanwhile; the confirm then
/// re-checks the attempt under the lock and answers `410`, making no media
/// row for the object that is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_confirm_that_saw_the_object_before_its_lock_rechecks_and_never_records_a_swept_object() {
    let entered = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (e2, r2) = (entered.clone(), release.clone());
    let server = TestServer::start_with(Options {
        attempt_ttl: Some(Duration::from_secs(3600)),
        url_ttl: Some(Duration::from_secs(600)),
        wrap_objects: Some(Box::new(move |inner| {
            Arc::new(Intercepted::new(inner, HeadAfterRelease { entered: e2, release: r2 })) as Arc<dyn ObjectStore>
        })),
        ..Default::default()
    })
    .await;
    let guest = server.guest().await;
    let (id, _) = guest.authorize_and_put(b"race").await;

    server.clock.advance(HOUR - 1000);
    let confirm = spawn_confirm(&server, &guest.session, id);
    entered.notified().await;

    // The confirm is waiting on the store, before its lock: the sweeper
    // expires the attempt and deletes its object without waiting for it.
    server.clock.advance(2000);
    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!((report.expired, report.objects_deleted), (1, 1), "expired and swept while the confirm waited");
    assert!(server.stored_keys().await.is_empty());

    // The HEAD answers what it saw before the sweep: the object.
    release.add_permits(1000);
    assert_eq!(confirm.await.unwrap(), StatusCode::GONE, "re-checked under the lock: expired");
    assert_eq!(server.counts().await.1, 0, "no media row for an object that is gone");
    assert_eq!(guest.status(&[id]).await["results"][0]["state"], "expired");
}

fn spawn_confirm(server: &TestServer, session: &str, id: Uuid) -> tokio::task::JoinHandle<StatusCode> {
    let session = session.to_owned();
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
}

/// An object store whose HEAD looks first, then waits until released to
/// answer what it saw (a slow answer about an object that was there).
struct HeadAfterRelease {
    entered: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Semaphore>,
}

#[async_trait::async_trait]
impl Interceptor for HeadAfterRelease {
    async fn after(&self, call: Call<'_>, _started: std::time::Instant, _failed: bool) -> Result<()> {
        if call.operation == Operation::Head {
            self.entered.notify_one();
            self.release.acquire().await.unwrap().forget();
        }
        Ok(())
    }
}
