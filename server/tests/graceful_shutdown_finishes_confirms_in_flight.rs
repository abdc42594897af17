//! On SIGTERM (here: the shutdown future resolving) the server takes no new
//! connections, lets a confirm in flight finish and answer, then stops; a
//! request still running at `--shutdown-timeout` is given up: the server
//! stops without answering it, and what it had not committed is not stored.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use support::{GatedObjects, Options, TestServer, until};

/// A server whose object store's HEAD (the confirm's look at the stored
/// bytes) waits until the test releases it, and which stops when told.
async fn gated(
    shutdown_timeout: Duration,
) -> (TestServer, Arc<tokio::sync::Notify>, Arc<tokio::sync::Semaphore>, tokio::sync::oneshot::Sender<()>) {
    let entered = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (e2, r2) = (entered.clone(), release.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let server = TestServer::start_with(Options {
        wrap_objects: Some(Box::new(move |inner| Arc::new(GatedObjects::heads(inner, e2, r2)))),
        configure: Some(Box::new(move |c| c.limits.shutdown_timeout = shutdown_timeout)),
        shutdown: Some(stopped),
        ..Default::default()
    })
    .await;
    (server, entered, release, stop)
}

/// Starts the confirm of a freshly uploaded photo; returns once it waits
/// at the store.
async fn confirm_in_flight(
    server: &TestServer,
    entered: &tokio::sync::Notify,
    release: &tokio::sync::Semaphore,
) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
    let guest = server.guest().await;
    let (id, _) = guest.authorize_and_put(b"hello").await;
    let confirm = guest.spawn_confirm(id, serde_json::json!({"size": 5, "content_type": "image/png"}));
    entered.notified().await;
    // Nothing else may pass the gate.
    assert_eq!(release.available_permits(), 0);
    confirm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_confirm_in_flight_finishes_and_new_connections_are_refused() {
    let (server, entered, release, stop) = gated(Duration::from_secs(30)).await;
    let confirm = confirm_in_flight(&server, &entered, &release).await;

    stop.send(()).unwrap();
    let address = server.base.trim_start_matches("http://").to_owned();
    until("new connections to be refused", Duration::from_secs(10), || std::net::TcpStream::connect(&address).is_err())
        .await;
    assert!(!server.stopped(), "the server waits for the confirm in flight");
    assert!(!confirm.is_finished());

    release.add_permits(1);
    assert_eq!(confirm.await.unwrap().unwrap().status(), StatusCode::OK, "the confirm in flight finished and answered");
    until("the server to stop", Duration::from_secs(10), || server.stopped()).await;
    assert_eq!(server.counts().await.1, 1, "its media stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_still_running_at_the_deadline_is_given_up() {
    let (server, entered, release, stop) = gated(Duration::from_secs(1)).await;
    let confirm = confirm_in_flight(&server, &entered, &release).await;

    stop.send(()).unwrap();
    // The store never answers: the server stops at its deadline anyway, the
    // confirm unanswered and nothing of it committed. (The process would
    // exit here; in this test the runtime goes on, so the parked handler is
    // left where it waits.)
    until("the server to stop at its deadline", Duration::from_secs(15), || server.stopped()).await;
    assert!(!confirm.is_finished(), "the confirm was not answered");
    assert_eq!(server.counts().await.1, 0, "nothing it had not committed is stored");
    confirm.abort();
    drop(release);
}
