//! What the server does on its own behalf, whatever its clients do: every
//! request's handler runs to its end even when the client hangs up, and the
//! database's health is tracked, probed back to life and logged once per
//! outage.
//!
//! A client that closes its connection makes hyper drop the request's
//! future. Were the handler that future, a hang-up could stop it anywhere:
//! halfway through a transaction, between a `BEGIN` and the value that
//! would have rolled it back. [`run_to_completion`] runs the handler as a
//! task of its own and only waits for it, so a hang-up costs the client its
//! answer and nothing else.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

/// How long a write may wait for the database (SQLite's write lock, a
/// PostgreSQL row or table lock, a pooled connection) before it is answered
/// `503 database_unavailable` with `Retry-After`.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How often a failing database is probed until it takes writes again.
const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How long one readiness probe answers for, on the server's clock. The
/// probes write (a row, a file in the store), so a load balancer that polls
/// `/readyz` — or a stranger who floods it — makes at most one a second.
pub const READINESS_TTL_MS: i64 = 1_000;

/// Why the server is not ready: the code, and the reason in the
/// database's or the object store's own words (for the admin alone: an S3
/// error can carry a presigned URL and its access key id). `None`: ready.
pub type Readiness = Option<(upload_once_core::ErrorCode, String)>;

/// A database failure a response carries, for [`run_to_completion`] to
/// report: [`crate::Error`] leaves the logging to it, so an outage is logged
/// once rather than once per request.
#[derive(Clone, Debug)]
pub struct DatabaseFailure(pub String);

/// The server's own account of its health.
#[derive(Debug, Default)]
pub struct Ops {
    hangups: AtomicU64,
    in_flight: AtomicU64,
    /// Requests waiting for a rendition job (counted in `in_flight` too).
    waiting_for_jobs: AtomicU64,
    database: Mutex<DatabaseHealth>,
    /// The last readiness probe: when (server clock) and what it found.
    readiness: tokio::sync::Mutex<Option<(upload_once_core::time::UnixMillis, Readiness)>>,
}

#[derive(Debug, Default)]
struct DatabaseHealth {
    /// Since when writes fail, and why (the first failure's reason).
    outage: Option<Outage>,
}

#[derive(Debug)]
struct Outage {
    since: Instant,
    reason: String,
    failures: u64,
}

impl Ops {
    /// Requests whose client hung up before the answer (their work went
    /// on).
    pub fn hangups(&self) -> u64 {
        self.hangups.load(Ordering::SeqCst)
    }

    /// Handlers running now (a hung-up request's handler counts until it
    /// ends).
    pub fn requests_in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Requests waiting now for a rendition job to end: they hold no slot
    /// of `--max-requests-in-flight` (a job can take seconds, and no other
    /// request should wait for it), but at most [`MAX_JOB_WAITERS`] wait at
    /// once.
    pub fn waiting_for_jobs(&self) -> u64 {
        self.waiting_for_jobs.load(Ordering::SeqCst)
    }

    /// A place among the requests waiting for a rendition job, or `None`
    /// when [`MAX_JOB_WAITERS`] already wait (the request then answers at
    /// once that the rendition is still being made).
    pub fn wait_for_job(self: &Arc<Self>) -> Option<JobWaiter> {
        self.waiting_for_jobs
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < MAX_JOB_WAITERS).then_some(n + 1))
            .ok()
            .map(|_| JobWaiter(self.clone()))
    }

    /// Why the database does not take writes, while it does not.
    pub fn database_outage(&self) -> Option<String> {
        self.database.lock().expect("health lock").outage.as_ref().map(|o| o.reason.clone())
    }

    /// Records a failed database write. True when it starts an outage (the
    /// caller then probes until it ends); only that first failure is logged
    /// as an error.
    pub fn database_failed(&self, reason: &str) -> bool {
        let mut health = self.database.lock().expect("health lock");
        match &mut health.outage {
            Some(outage) => {
                outage.failures += 1;
                tracing::debug!(failures = outage.failures, "database still failing: {reason}");
                false
            }
            None => {
                tracing::error!(code = "database_unavailable", "the database does not take writes: {reason}");
                health.outage = Some(Outage { since: Instant::now(), reason: reason.to_owned(), failures: 1 });
                true
            }
        }
    }

    /// Records that the database took a write: ends an outage, saying so
    /// once.
    pub fn database_ok(&self) {
        let mut health = self.database.lock().expect("health lock");
        if let Some(outage) = health.outage.take() {
            tracing::info!(
                failed_requests = outage.failures,
                "the database takes writes again after {:.1} s",
                outage.since.elapsed().as_secs_f64()
            );
        }
    }
}

/// Whether the server should get traffic: the database takes writes and the
/// object store can take uploads. Probed at most once per
/// [`READINESS_TTL_MS`]; callers meanwhile share the last answer (one
/// probe at a time: the others wait for it).
pub async fn readiness(state: &AppState) -> Readiness {
    let mut last = state.ops.readiness.lock().await;
    if let Some((at, found)) = last.as_ref() {
        if (0..READINESS_TTL_MS).contains(&(state.now() - at)) {
            return found.clone();
        }
    }
    let (database, objects) = tokio::join!(probe_database(state), probe_objects(state));
    let database = database.err().map(|e| format!("the database does not take writes: {e}"));
    let objects = objects.err().map(|e| match e {
        crate::Error::ObjectStore(reason) => format!("the object store cannot take uploads: {reason}"),
        other => format!("the object store cannot take uploads: {other}"),
    });
    let code = match (&database, &objects) {
        (None, None) => None,
        (Some(_), _) => Some(upload_once_core::ErrorCode::DatabaseUnavailable),
        (None, Some(_)) => Some(upload_once_core::ErrorCode::ObjectStoreUnavailable),
    };
    let found = code.map(|code| (code, [database, objects].into_iter().flatten().collect::<Vec<_>>().join("; ")));
    *last = Some((state.now(), found.clone()));
    found
}

/// Probes the database for writes: the readiness check's answer, with the
/// health record updated (an outage starts or ends here too).
pub async fn probe_database(state: &AppState) -> crate::Result<()> {
    let probe = tokio::time::timeout(LOCK_WAIT, state.records.probe_write(state.now())).await;
    let result = match probe {
        Ok(result) => result,
        Err(_) => Err(crate::Error::Database(sqlx::Error::PoolTimedOut)),
    };
    match &result {
        Ok(()) => state.ops.database_ok(),
        Err(e) => {
            if state.ops.database_failed(&e.to_string()) {
                heal(state.clone());
            }
        }
    }
    result
}

/// Probes the object store: whether it can take uploads, answered within
/// [`LOCK_WAIT`].
pub async fn probe_objects(state: &AppState) -> crate::Result<()> {
    match tokio::time::timeout(LOCK_WAIT, state.objects.probe()).await {
        Ok(result) => result,
        Err(_) => Err(crate::Error::ObjectStore(format!("no answer within {} s", LOCK_WAIT.as_secs()))),
    }
}

/// Probes a failing database every second until it takes writes again (the
/// recovery is logged by [`Ops::database_ok`]).
fn heal(state: AppState) {
    tokio::spawn(async move {
        while state.ops.database_outage().is_some() {
            tokio::time::sleep(PROBE_EVERY).await;
            let probe = tokio::time::timeout(LOCK_WAIT, state.records.probe_write(state.now())).await;
            if let Ok(Ok(())) = probe {
                state.ops.database_ok();
            }
        }
    });
}

/// Marks a request's answer as given; counts a hang-up if the request's
/// future is dropped first.
struct HangUpWatch<'a> {
    ops: &'a Ops,
    route: Option<String>,
}

impl Drop for HangUpWatch<'_> {
    fn drop(&mut self) {
        if let Some(route) = self.route.take() {
            self.ops.hangups.fetch_add(1, Ordering::SeqCst);
            tracing::debug!(%route, "the client hung up; the request's work goes on");
        }
    }
}

/// Requests that may wait for a rendition job at once (each holds a socket
/// and a task, not an API slot).
pub const MAX_JOB_WAITERS: u64 = 1024;

/// A request's place among those waiting for a rendition job; given back
/// when dropped.
#[derive(Debug)]
pub struct JobWaiter(Arc<Ops>);

impl Drop for JobWaiter {
    fn drop(&mut self) {
        self.0.waiting_for_jobs.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts a handler as running until it ends, however it ends.
struct InFlight(Arc<Ops>);

impl InFlight {
    fn start(ops: Arc<Ops>) -> InFlight {
        ops.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(ops)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Middleware: runs the request's handler as a task of its own, so no
/// client can cancel the server's durable work halfway (a hang-up only
/// loses the answer), counts hang-ups, and reports database failures to
/// the health record.
pub async fn run_to_completion(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut watch =
        HangUpWatch { ops: &state.ops, route: Some(format!("{} {}", request.method(), request.uri().path())) };
    let running = InFlight::start(state.ops.clone());
    let handler = async move {
        let _running = running;
        next.run(request).await
    };
    // In the request's span, so what the handler logs carries its id.
    let response = match tokio::spawn(tracing::Instrument::in_current_span(handler)).await {
        Ok(response) => response,
        // The handler panicked: let the panic layer answer it.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => crate::error::problem_response(
            upload_once_core::ErrorCode::Internal,
            "the server is shutting down".to_owned(),
        ),
    };
    watch.route = None;
    if let Some(DatabaseFailure(reason)) = response.extensions().get::<DatabaseFailure>() {
        if state.ops.database_failed(reason) {
            heal(state.clone());
        }
    }
    response
}
