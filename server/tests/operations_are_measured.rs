//! `GET /metrics` serves Prometheus metrics (OpenMetrics text): requests by
//! matched route and status, confirms by outcome, object-store calls timed
//! and their failures counted per operation, the sweeper's backlog, client
//! hang-ups and database connections discarded dirty. Each is checked
//! against what the test made happen.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use sqlx::Connection;
use support::{
    GatedObjects, Options, TestServer, create_bucket, fresh_database_url, is_s3, s3_endpoint, unique_name, until,
};
use upload_once_server::store::sql::SqlStore;
use uuid::Uuid;

const HOUR: i64 = 3_600_000;
/// A bound on a hang, not a measure of speed.
const LIMIT: Duration = Duration::from_secs(20);

async fn scrape(server: &TestServer) -> String {
    let r = server.http.get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let ct = r.headers().get("content-type").unwrap().to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let text = r.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "a complete exposition");
    text
}

/// The value of the sample `name` whose labels include all of `labels`
/// (exactly one such sample).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let matching: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter(|l| labels.iter().all(|(k, v)| l.contains(&format!("{k}=\"{v}\""))))
        .collect();
    assert_eq!(matching.len(), 1, "one sample {name} {labels:?}; have {matching:?}\n{text}");
    matching[0].rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn requests_and_confirms_are_counted_by_matched_route_status_and_outcome() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let (created, _) = guest.upload(b"hello".to_vec()).await;
    assert_eq!(guest.confirm(created, 5).await.status(), StatusCode::OK, "a replay");
    let (rejected, _) = guest.authorize_and_put(b"hello").await;
    for _ in 0..2 {
        assert_eq!(
            guest.confirm(rejected, 6).await.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "a size mismatch, then its record"
        );
    }
    let missing = Uuid::new_v4();
    guest.authorize(missing, 5).await;
    assert_eq!(guest.confirm(missing, 5).await.status(), StatusCode::CONFLICT, "object_missing");
    assert_eq!(server.http.get(server.url("/no/such/route")).send().await.unwrap().status(), StatusCode::NOT_FOUND);

    let text = scrape(&server).await;
    let confirm = [("route", "/v1/attempts/{id}/confirm"), ("method", "POST")];
    assert_eq!(sample(&text, "upload_once_http_requests_total", &[confirm[0], confirm[1], ("status", "200")]), 2.0);
    assert_eq!(sample(&text, "upload_once_http_requests_total", &[confirm[0], confirm[1], ("status", "422")]), 2.0);
    assert_eq!(sample(&text, "upload_once_http_requests_total", &[confirm[0], confirm[1], ("status", "409")]), 1.0);
    let authorize = [("route", "/v1/events/{slug}/attempts"), ("method", "POST"), ("status", "201")];
    assert_eq!(sample(&text, "upload_once_http_requests_total", &authorize), 3.0);
    assert_eq!(sample(&text, "upload_once_http_requests_total", &[("route", "unmatched"), ("status", "404")]), 1.0);
    for id in [created, rejected, missing] {
        assert!(!text.contains(&id.to_string()), "routes are labelled by template, never by raw path");
    }

    for (outcome, n) in [("created", 1.0), ("replayed", 1.0), ("rejected", 2.0), ("object_missing", 1.0)] {
        assert_eq!(sample(&text, "upload_once_confirms_total", &[("outcome", outcome)]), n, "{outcome}");
    }
    assert_eq!(sample(&text, "upload_once_confirms_total", &[("outcome", "expired")]), 0.0, "no confirm expired");
    // HEADs: the created confirm's and the object_missing one's (a replay and
    // a claim mismatch stop before the object store).
    let head = [("operation", "head")];
    assert_eq!(sample(&text, "upload_once_object_store_request_duration_seconds_count", &head), 2.0);
    assert_eq!(sample(&text, "upload_once_object_store_errors_total", &head), 0.0, "no HEAD failed");
}

#[tokio::test]
async fn object_store_calls_are_timed_and_their_failures_counted_per_operation() {
    let bucket = unique_name("t-");
    let server = if is_s3() {
        // A bucket that is not there yet.
        TestServer::start_with(Options { bucket: Some(bucket.clone()), ..Default::default() }).await
    } else {
        TestServer::start().await
    };
    let uploads = server.state.config.data_dir.join("objects").join(".tmp");
    if !is_s3() {
        std::fs::remove_dir_all(&uploads).unwrap();
        std::fs::write(&uploads, b"not a directory").unwrap();
    }
    let probe = [("operation", "probe")];
    assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    let text = scrape(&server).await;
    assert_eq!(sample(&text, "upload_once_object_store_errors_total", &probe), 1.0);
    assert_eq!(sample(&text, "upload_once_object_store_request_duration_seconds_count", &probe), 1.0);

    if is_s3() {
        create_bucket(&s3_endpoint(), &bucket).await;
    } else {
        std::fs::remove_file(&uploads).unwrap();
        std::fs::create_dir(&uploads).unwrap();
    }
    // The next probe: one runs at most once a second.
    server.clock.advance(upload_once_server::ops::READINESS_TTL_MS);
    assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), StatusCode::OK);
    let text = scrape(&server).await;
    assert_eq!(sample(&text, "upload_once_object_store_errors_total", &probe), 1.0, "the success is not a failure");
    assert_eq!(sample(&text, "upload_once_object_store_request_duration_seconds_count", &probe), 2.0);
}

/// Deletes the store refuses while `refusing` is set.
#[derive(Default)]
struct RefusedDeletes {
    refusing: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl upload_once_server::storage::intercept::Interceptor for RefusedDeletes {
    async fn before(&self, call: upload_once_server::storage::intercept::Call<'_>) -> upload_once_server::Result<()> {
        use upload_once_server::storage::intercept::Operation;
        if call.operation == Operation::Delete && self.refusing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(upload_once_server::Error::ObjectStore("refused by the test".into()));
        }
        Ok(())
    }
}

/// The backlog is what the sweeper's last pass left: measured by the pass,
/// never by a scrape (a scrape reads no database, however often it comes).
#[tokio::test]
async fn the_sweep_backlog_is_what_the_sweepers_last_pass_left() {
    let refused = Arc::new(RefusedDeletes::default());
    let interceptor = refused.clone();
    let server = TestServer::start_with(Options {
        wrap_objects: Some(Box::new(move |inner| {
            Arc::new(upload_once_server::storage::intercept::Intercepted::new(inner, interceptor))
        })),
        ..Options::attempts_of_an_hour()
    })
    .await;
    let guest = server.guest().await;
    let backlog = |text: &str| {
        (
            sample(text, "upload_once_sweep_backlog_expired_attempts", &[]),
            sample(text, "upload_once_sweep_backlog_dead_objects", &[]),
        )
    };
    assert!(!scrape(&server).await.contains("upload_once_sweep_backlog"), "not measured before a pass");

    // One attempt past its expiry and one rejected: the pass expires the
    // first, but the store refuses to delete either object.
    guest.authorize(Uuid::new_v4(), 5).await;
    server.clock.advance(HOUR + 1000);
    let rejected = Uuid::new_v4();
    guest.authorize(rejected, 5).await;
    assert_eq!(guest.confirm(rejected, 6).await.status(), StatusCode::UNPROCESSABLE_ENTITY);
    refused.refusing.store(true, std::sync::atomic::Ordering::SeqCst);
    server.sweep().await;
    assert_eq!(backlog(&scrape(&server).await), (0.0, 2.0), "two objects left to delete");

    // Another attempt expires: no scrape counts it, only the next pass.
    guest.authorize(Uuid::new_v4(), 5).await;
    server.clock.advance(HOUR + 1000);
    for _ in 0..3 {
        assert_eq!(backlog(&scrape(&server).await), (0.0, 2.0), "as the last pass left it");
    }
    refused.refusing.store(false, std::sync::atomic::Ordering::SeqCst);
    server.sweep().await;
    assert_eq!(backlog(&scrape(&server).await), (0.0, 0.0), "the sweeper did it all");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hangups_requests_in_flight_and_dirty_connections_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let store = SqlStore::open(&url).await.unwrap();
    let entered = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (e2, r2) = (entered.clone(), release.clone());
    let server = TestServer::start_with(Options {
        records: Some(Arc::new(store.clone())),
        wrap_objects: Some(Box::new(move |inner| Arc::new(GatedObjects::heads(inner, e2, r2)))),
        ..Default::default()
    })
    .await;
    let counters = |text: &str| {
        (
            sample(text, "upload_once_client_hangups_total", &[]),
            sample(text, "upload_once_requests_in_flight", &[]),
            sample(text, "upload_once_database_dirty_connections_discarded_total", &[]),
        )
    };
    assert_eq!(counters(&scrape(&server).await), (0.0, 0.0, 0.0));

    // A connection given back inside a transaction is closed, and counted.
    let mut conn = store.pool().acquire().await.unwrap();
    std::mem::forget(conn.begin_with(store.dialect().begin_write()).await.unwrap());
    drop(conn);
    let records = server.state.records.clone();
    until("the dirty connection to be discarded", LIMIT, || records.dirty_connections_discarded() == 1).await;
    assert_eq!(counters(&scrape(&server).await).2, 1.0);

    // A confirm held at its object HEAD, whose client hangs up.
    let guest = server.guest().await;
    let (id, _) = guest.authorize_and_put(b"hello").await;
    let client = guest.send_confirm_by_hand(id, 5).await;
    entered.notified().await;
    drop(client);
    let ops = server.state.ops.clone();
    until("the server to see the hang-up", LIMIT, || ops.hangups() == 1).await;
    assert_eq!(counters(&scrape(&server).await), (1.0, 1.0, 1.0), "one hang-up, its confirm still at work");

    release.add_permits(1000);
    until("the hung-up confirm to end", LIMIT, || ops.requests_in_flight() == 0).await;
    assert_eq!(counters(&scrape(&server).await), (1.0, 0.0, 1.0));
    assert_eq!(guest.status(&[id]).await["results"][0]["state"], "confirmed", "the work went on without its client");
}
