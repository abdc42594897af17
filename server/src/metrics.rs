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
//! | `upload_once_sweep_backlog_expired_attempts` | gauge | — | [`crate::store::RecordStore::sweep_backlog`], at each scrape |
//! | `upload_once_sweep_backlog_dead_objects` | gauge | — | the same |
//! | `upload_once_media_answers_total` | counter | `answer`: `full`, `partial`, `unsatisfiable`, `redirect`, `placeholder` | [`crate::media::MediaServices::count`], the media URLs |
//! | `upload_once_live_walls` | gauge | — | walls listening to their live feed now |

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use upload_once_core::ErrorCode;

use crate::error::{Error, Result};
use crate::ops::LOCK_WAIT;
use crate::state::AppState;
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
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
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
        // Every series from zero, so a rate is there before the first event.
        for outcome in ConfirmOutcome::ALL {
            drop(confirms.get_or_create(&OutcomeLabels { outcome: outcome.as_str() }));
        }
        for operation in OPERATIONS {
            drop(store_seconds.get_or_create(&OperationLabels { operation }));
            drop(store_errors.get_or_create(&OperationLabels { operation }));
        }
        Metrics { registry, requests, confirms, store_seconds, store_errors }
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

/// A label value for any method, bounded: the standard ones, else `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Middleware: counts every answered request by the route it matched (its
/// template, never the raw path), method and status. A request whose client
/// hung up got no answer: it is counted in `client_hangups_total` instead.
pub async fn count_requests(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_owned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    state.metrics.requests.get_or_create(&RequestLabels { route, method, status: response.status().as_u16() }).inc();
    response
}

/// `GET /metrics`: every metric, the live ones read now. The sweep backlog
/// is counted in the database (at most [`LOCK_WAIT`]); when it cannot be,
/// it is left out of this scrape rather than shown stale.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, content_type = "application/openmetrics-text", body = String, description = "Prometheus metrics (OpenMetrics text); see docs/deploy.md"),
))]
pub async fn serve(State(state): State<AppState>) -> Response {
    let mut live = Registry::with_prefix("upload_once");
    live.register(
        "client_hangups",
        "Requests whose client hung up before the answer (their work went on)",
        ConstCounter::new(state.ops.hangups()),
    );
    live.register("requests_in_flight", "Handlers running now", ConstGauge::new(state.ops.requests_in_flight() as i64));
    live.register(
        "database_dirty_connections_discarded",
        "Database connections closed because they came back inside a transaction",
        ConstCounter::new(state.records.dirty_connections_discarded()),
    );
    match tokio::time::timeout(LOCK_WAIT, state.records.sweep_backlog(state.now())).await {
        Ok(Ok(backlog)) => {
            live.register(
                "sweep_backlog_expired_attempts",
                "Authorized attempts past their expiry that the sweeper has not expired yet",
                ConstGauge::new(backlog.expired_attempts as i64),
            );
            live.register(
                "sweep_backlog_dead_objects",
                "Expired or rejected attempts whose object the sweeper has not deleted yet",
                ConstGauge::new(backlog.dead_objects as i64),
            );
        }
        Ok(Err(e)) => tracing::debug!("metrics: the sweep backlog is left out: {e}"),
        Err(_) => tracing::debug!("metrics: the sweep backlog is left out: the database did not answer in time"),
    }
    state.media.register_metrics(&mut live);
    let mut text = String::new();
    let encoded = encode_registry(&mut text, &state.metrics.registry)
        .and_then(|()| encode_registry(&mut text, &live))
        .and_then(|()| encode_eof(&mut text));
    if encoded.is_err() {
        return crate::error::problem_response(ErrorCode::Internal, "the metrics could not be encoded".into());
    }
    let mut response = text.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
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
