//! What the server does on its own behalf, whatever its clients do: every
//! request's handler runs to its end even when the client hangs up, and the
//! database's health is tracked, probed back to life and logged once per
//! outage: the record ([`Ops`]) is kept here; the middleware and probes
//! that feed it are in routes/operations.rs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a write may wait for the database (SQLite's write lock, a
/// PostgreSQL row or table lock, a pooled connection) before it is answered
/// `503 database_unavailable` with `Retry-After`.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How often a failing database is probed until it takes writes again.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How long one readiness probe answers for, on the server's clock. The
/// probes write (a row, a file in the store), so a load balancer that polls
/// `/readyz` — or a stranger who floods it — makes at most one a second.
pub const READINESS_TTL_MS: i64 = 1_000;

/// Why the server is not ready: the code, and the reason in the
/// database's or the object store's own words (for the admin alone: an S3
/// error can carry a presigned URL and its access key id). `None`: ready.
pub type Readiness = Option<(upload_once_core::ErrorCode, String)>;

/// The server's own account of its health.
#[derive(Debug, Default)]
pub struct Ops {
    hangups: AtomicU64,
    in_flight: AtomicU64,
    /// Requests waiting for a rendition job (counted in `in_flight` too).
    waiting_for_jobs: AtomicU64,
    database: Mutex<DatabaseHealth>,
    /// The last readiness probe: when (server clock) and what it found.
    pub(crate) readiness: tokio::sync::Mutex<Option<(upload_once_core::time::UnixMillis, Readiness)>>,
    /// The sweep backlog as the sweeper's last pass measured it (`None`
    /// before the first): `GET /metrics` reads it, never the database.
    sweep_backlog: Mutex<Option<crate::store::SweepBacklog>>,
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
    /// Records the sweep backlog the sweeper measured.
    pub fn set_sweep_backlog(&self, backlog: crate::store::SweepBacklog) {
        *self.sweep_backlog.lock().expect("sweep backlog") = Some(backlog);
    }

    /// The sweep backlog as last measured, if it was.
    pub fn sweep_backlog(&self) -> Option<crate::store::SweepBacklog> {
        *self.sweep_backlog.lock().expect("sweep backlog")
    }

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

/// Marks a request's answer as given; counts a hang-up if the request's
/// future is dropped first.
pub struct HangUpWatch<'a> {
    /// The health record.
    pub ops: &'a Ops,
    /// The request, until its answer is given (`None`).
    pub route: Option<String>,
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
pub struct InFlight(Arc<Ops>);

impl InFlight {
    /// Counts one more handler running.
    pub fn start(ops: Arc<Ops>) -> InFlight {
        ops.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(ops)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
