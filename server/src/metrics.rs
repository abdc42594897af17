//! Prometheus metrics, served at `GET /metrics` in the OpenMetrics text
//! format (prometheus-client). Each is counted where it happens, or read
//! where it is already kept:
//!
//! | metric | type | labels | source |
//! | --- | --- | --- | --- |
//! | `upload_once_http_requests_total` | counter | `route` (the matched route, `unmatched` for none), `method`, `status` | [`count_requests`], every answered request |
//! | `upload_once_confirms_total` | counter | `outcome`: `created`, `deduplicated`, `replayed`, `rejected`, `expired`, `object_missing` | confirm ([`ConfirmOutcome`]) |
//! | `upload_once_object_store_request_duration_seconds` | histogram | `operation`: `head`, `get` (whole or a range), `put` (renditions), `delete`, `list`, `probe`, `create_multipart`, `list_parts`, `complete_multipart`, `abort_multipart` | [`Measured`] |
//! | `upload_once_object_store_errors_total` | counter | `operation` | [`Measured`] |
//! | `upload_once_client_hangups_total` | counter | — | [`crate::ops::Ops::hangups`] |
//! | `upload_once_requests_in_flight` | gauge | — | [`crate::ops::Ops::requests_in_flight`] |
//! | `upload_once_database_dirty_connections_discarded_total` | counter | — | [`crate::store::RecordStore::dirty_connections_discarded`] |
//! | `upload_once_sweep_backlog_expired_attempts` | gauge | — | [`crate::store::RecordStore::sweep_backlog`], measured by each sweep pass (a scrape reads no database) |
//! | `upload_once_sweep_backlog_dead_objects` | gauge | — | the same |
//! | `upload_once_media_answers_total` | counter | `answer`: `full`, `partial`, `unsatisfiable`, `redirect`, `placeholder` | [`crate::media::MediaServices::count`], the media URLs |
//! | `upload_once_live_walls` | gauge | — | walls listening to their live feed now |
//! | `upload_once_rendition_jobs_total` | counter | `outcome`: `done`, `placeholder` | rendition jobs this instance ended ([`Metrics::rendition_job_ended`]); a claim whose lease ran out ends nothing, so over every instance the sum is one per media |
//! | `upload_once_sweeper_expired_attempts_total` | counter | — | attempts this instance's sweeper marked expired, each under its row lock ([`Metrics::swept`]) |

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use upload_once_core::ErrorCode;

use crate::error::{Error, Result};
use crate::storage::intercept::{Call, Interceptor};

/// The media type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

/// The object store's operations, as labelled.
const OPERATIONS: [&str; 10] = [
    "head",
    "get",
    "put",
    "delete",
    "list",
    "probe",
    "create_multipart",
    "list_parts",
    "complete_multipart",
    "abort_multipart",
];

/// What one confirm that reached its attempt answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfirmOutcome {
    /// `200`: the media record was created now.
    Created,
    /// `200`: the bytes were already stored in the event's dedup scope; the
    /// attempt was confirmed as a duplicate of that media.
    Deduplicated,
    /// `200`: the attempt was already confirmed; its record was returned.
    Replayed,
    /// `422`: a mismatch rejected the attempt, now or earlier.
    Rejected,
    /// `410`: the attempt expired.
    Expired,
    /// `409 object_missing`: the object is not stored yet; nothing changed.
    ObjectMissing,
}

impl ConfirmOutcome {
    /// Every outcome.
    pub const ALL: [ConfirmOutcome; 6] = [
        ConfirmOutcome::Created,
        ConfirmOutcome::Deduplicated,
        ConfirmOutcome::Replayed,
        ConfirmOutcome::Rejected,
        ConfirmOutcome::Expired,
        ConfirmOutcome::ObjectMissing,
    ];

    /// The `outcome` label.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmOutcome::Created => "created",
            ConfirmOutcome::Deduplicated => "deduplicated",
            ConfirmOutcome::Replayed => "replayed",
            ConfirmOutcome::Rejected => "rejected",
            ConfirmOutcome::Expired => "expired",
            ConfirmOutcome::ObjectMissing => "object_missing",
        }
    }

    /// The outcome a failed confirm's error stands for, if it reached the
    /// attempt (a refused session or a store outage did not).
    pub fn of_error(error: &Error) -> Option<ConfirmOutcome> {
        match error.code() {
            ErrorCode::SizeMismatch | ErrorCode::TypeMismatch | ErrorCode::ChecksumMismatch => {
                Some(ConfirmOutcome::Rejected)
            }
            ErrorCode::Expired => Some(ConfirmOutcome::Expired),
            ErrorCode::ObjectMissing => Some(ConfirmOutcome::ObjectMissing),
            _ => None,
        }
    }
}

/// The server's counters and histograms.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    confirms: Family<OutcomeLabels, Counter>,
    store_seconds: Family<OperationLabels, Histogram, fn() -> Histogram>,
    store_errors: Family<OperationLabels, Counter>,
    rendition_jobs: Family<OutcomeLabels, Counter>,
    expired_by_sweeper: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Counts one answered request: the route it matched (its template,
    /// `unmatched` for none), its method's label and its status.
    pub fn count_request(&self, route: String, method: &'static str, status: u16) {
        self.requests.get_or_create(&RequestLabels { route, method, status }).inc();
    }

    /// The registry of the counted metrics (a scrape encodes it).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Every metric at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("upload_once");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "Answered HTTP requests, by matched route, method and status",
            requests.clone(),
        );
        let confirms = Family::<OutcomeLabels, Counter>::default();
        registry.register("confirms", "Confirms that reached their attempt, by outcome", confirms.clone());
        // 1 ms to 16 s.
        let store_seconds: Family<OperationLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.001, 2.0, 15)));
        registry.register_with_unit(
            "object_store_request_duration",
            "Object store calls, by operation, until the answer's head (a GET's body streams on)",
            Unit::Seconds,
            store_seconds.clone(),
        );
        let store_errors = Family::<OperationLabels, Counter>::default();
        registry.register("object_store_errors", "Object store calls that failed, by operation", store_errors.clone());
        let rendition_jobs = Family::<OutcomeLabels, Counter>::default();
        registry.register("rendition_jobs", "Rendition jobs this instance ended, by outcome", rendition_jobs.clone());
        let expired_by_sweeper = Counter::default();
        registry.register(
            "sweeper_expired_attempts",
            "Attempts this instance's sweeper marked expired",
            expired_by_sweeper.clone(),
        );
        // Every series from zero, so a rate is there before the first event.
        for outcome in ["done", "placeholder"] {
            drop(rendition_jobs.get_or_create(&OutcomeLabels { outcome }));
        }
        for outcome in ConfirmOutcome::ALL {
            drop(confirms.get_or_create(&OutcomeLabels { outcome: outcome.as_str() }));
        }
        for operation in OPERATIONS {
            drop(store_seconds.get_or_create(&OperationLabels { operation }));
            drop(store_errors.get_or_create(&OperationLabels { operation }));
        }
        Metrics { registry, requests, confirms, store_seconds, store_errors, rendition_jobs, expired_by_sweeper }
    }

    /// Counts one rendition job this instance ended: `done` or `placeholder`.
    pub fn rendition_job_ended(&self, outcome: &'static str) {
        self.rendition_jobs.get_or_create(&OutcomeLabels { outcome }).inc();
    }

    /// Counts the attempts one sweep marked expired.
    pub fn swept(&self, expired: u64) {
        self.expired_by_sweeper.inc_by(expired);
    }

    /// Counts one confirm's outcome.
    pub fn confirmed(&self, outcome: ConfirmOutcome) {
        self.confirms.get_or_create(&OutcomeLabels { outcome: outcome.as_str() }).inc();
    }

    /// Records one object store call.
    pub fn object_store_call(&self, operation: &'static str, started: Instant, failed: bool) {
        let labels = OperationLabels { operation };
        self.store_seconds.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
        if failed {
            self.store_errors.get_or_create(&labels).inc();
        }
    }
}

/// Times every call of the object store and counts its failures (wrapped
/// around the store with [`crate::storage::intercept::Intercepted`]).
pub struct Measured(pub Arc<Metrics>);

#[async_trait]
impl Interceptor for Measured {
    async fn after(&self, call: Call<'_>, started: Instant, failed: bool) -> Result<()> {
        self.0.object_store_call(call.operation.label(), started, failed);
        Ok(())
    }
}
