//! Confirm asks the object store before it takes the attempt's row lock
//! (and re-checks the attempt under it), so a slow bucket holds no database
//! lock and no pooled connection: with more confirms waiting on storage
//! than the pool has connections, guests of other events still authorize,
//! upload and confirm — on SQLite, whose write lock is the whole database's,
//! and on PostgreSQL, whose pool would otherwise be drained. A large file's
//! parts are assembled the same way, before the lock: while the store
//! assembles one, other guests confirm.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use support::multipart::FILE;
use support::{Options, TestServer, until};
use upload_once_server::Result;
use upload_once_server::storage::ObjectStore;
use upload_once_server::storage::intercept::{Call, Intercepted, Interceptor, Operation};
use uuid::Uuid;

/// More than either pool holds (SQLite 8, PostgreSQL 16).
const HELD: usize = 20;
const SLOW_EVENT: &str = "slow-bucket-event";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn other_events_confirm_while_confirms_wait_on_a_slow_store() {
    let (server, entered, release) = slow_server(format!("{SLOW_EVENT}/"), Held::Head, Options::default()).await;
    let slow = server.create_event(SLOW_EVENT, 1_000_000, &["image/*"], "required").await;
    let slow = server.guest_of(&slow).await;
    let mut ids = Vec::new();
    for i in 0..HELD {
        let id = Uuid::new_v4();
        let a = slow.authorize(id, 4).await;
        // Each its own photo (the same bytes would be one media: dedup).
        assert_eq!(server.put(a.put().unwrap(), format!("s{i:03}").into_bytes()).await.status(), StatusCode::OK);
        ids.push(id);
    }

    // Every one of the slow event's confirms waits on the store.
    let confirms: Vec<_> = ids
        .iter()
        .map(|id| slow.spawn_confirm(*id, serde_json::json!({"size": 4, "content_type": "image/png"})))
        .collect();
    until("the slow confirms to be at the server, one at the store", Duration::from_secs(30), || {
        server.state.ops.requests_in_flight() >= HELD as u64 && entered.load(Ordering::SeqCst) >= 1
    })
    .await;

    // Meanwhile guests of other events go all the way, several at once.
    let others = futures_util::future::join_all((0..4).map(|_| server.another_event_still_uploads())).await;
    assert_eq!(others.len(), 4);
    until("every slow confirm to wait on the store", Duration::from_secs(30), || {
        entered.load(Ordering::SeqCst) == HELD
    })
    .await;
    assert!(confirms.iter().all(|c| !c.is_finished()), "the slow confirms were still waiting all along");

    release.add_permits(HELD);
    for confirm in confirms {
        assert_eq!(confirm.await.unwrap().unwrap().status(), StatusCode::OK);
    }
    let status = slow.status(&ids).await;
    assert!(status["results"].as_array().unwrap().iter().all(|r| r["state"] == "confirmed"));
    assert_eq!(server.counts().await.1, HELD as u64 + 4, "each confirmed once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn other_guests_confirm_while_the_store_assembles_a_large_file() {
    let (server, entered, release) = slow_server(String::new(), Held::Complete, support::multipart::options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(31).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    let claim = serde_json::json!({"size": FILE, "content_type": "video/mp4",
                                   "composite_sha256": support::multipart::composite(&bytes, &plan)});
    let confirm = guest.spawn_confirm(id, claim);
    until("the store to be assembling the large file", Duration::from_secs(30), || entered.load(Ordering::SeqCst) == 1)
        .await;

    // Meanwhile guests of other events go all the way (on SQLite an
    // assembly under the attempt's row lock would hold the database's one
    // write lock, and they would wait for it).
    futures_util::future::join_all((0..3).map(|_| server.another_event_still_uploads())).await;
    assert!(!confirm.is_finished(), "the large file's confirm was still waiting on the store");

    release.add_permits(1);
    assert_eq!(confirm.await.unwrap().unwrap().status(), StatusCode::OK);
    assert_eq!(guest.status_of(id).await["state"], "confirmed");
    assert!(server.object_bytes(&authorized.object_key).await == bytes);
    assert_eq!(server.counts().await.1, 4, "each confirmed once");
}

/// A server of these options whose object store holds the calls `on`
/// keys under `prefix` (see [`SlowFor`]): how many have arrived there, and
/// the permits that let them go on.
async fn slow_server(
    prefix: String,
    on: Held,
    options: Options,
) -> (TestServer, Arc<AtomicUsize>, Arc<tokio::sync::Semaphore>) {
    let entered = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (e2, r2) = (entered.clone(), release.clone());
    let server = TestServer::start_with(Options {
        wrap_objects: Some(Box::new(move |inner| {
            Arc::new(Intercepted::new(inner, SlowFor { prefix, on, entered: e2, release: r2 })) as Arc<dyn ObjectStore>
        })),
        ..options
    })
    .await;
    (server, entered, release)
}

/// Which store call waits until released.
#[derive(Clone, Copy, PartialEq)]
enum Held {
    Head,
    Complete,
}

/// An object store whose HEADs (or multipart completes) of keys under
/// `prefix` wait until released.
struct SlowFor {
    prefix: String,
    on: Held,
    entered: Arc<AtomicUsize>,
    release: Arc<tokio::sync::Semaphore>,
}

#[async_trait]
impl Interceptor for SlowFor {
    async fn before(&self, call: Call<'_>) -> Result<()> {
        let held = match self.on {
            Held::Head => Operation::Head,
            Held::Complete => Operation::CompleteMultipart,
        };
        if call.operation == held && call.key.starts_with(&self.prefix) {
            self.entered.fetch_add(1, Ordering::SeqCst);
            self.release.acquire().await.unwrap().forget();
        }
        Ok(())
    }
}
