//! `GET /metrics` and the middleware that counts every answered request;
//! the metrics themselves are [`crate::metrics`].

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use upload_once_core::ErrorCode;

use crate::metrics::CONTENT_TYPE;
use crate::ops::LOCK_WAIT;
use std::sync::Arc;

use crate::media::MediaServices;
use crate::metrics::Metrics;
use crate::ops::Ops;
use crate::state::{Lifetimes, Records};

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
pub async fn count_requests(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_owned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    metrics.count_request(route, method, response.status().as_u16());
    response
}

/// `GET /metrics`: every metric, the live ones read now. The sweep backlog
/// is counted in the database (at most [`LOCK_WAIT`]); when it cannot be,
/// it is left out of this scrape rather than shown stale.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, content_type = "application/openmetrics-text", body = String, description = "Prometheus metrics (OpenMetrics text); see docs/deploy.md"),
))]
pub async fn serve(
    State(ops): State<Arc<Ops>>,
    State(records): State<Records>,
    State(lifetimes): State<Lifetimes>,
    State(media): State<Arc<MediaServices>>,
    State(metrics): State<Arc<Metrics>>,
) -> Response {
    let mut live = Registry::with_prefix("upload_once");
    live.register(
        "client_hangups",
        "Requests whose client hung up before the answer (their work went on)",
        ConstCounter::new(ops.hangups()),
    );
    live.register("requests_in_flight", "Handlers running now", ConstGauge::new(ops.requests_in_flight() as i64));
    live.register(
        "database_dirty_connections_discarded",
        "Database connections closed because they came back inside a transaction",
        ConstCounter::new(records.dirty_connections_discarded()),
    );
    match tokio::time::timeout(LOCK_WAIT, records.sweep_backlog(lifetimes.now())).await {
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
    media.register_metrics(&mut live);
    let mut text = String::new();
    let encoded = encode_registry(&mut text, metrics.registry())
        .and_then(|()| encode_registry(&mut text, &live))
        .and_then(|()| encode_eof(&mut text));
    if encoded.is_err() {
        return crate::error::problem_response(ErrorCode::Internal, "the metrics could not be encoded".into());
    }
    let mut response = text.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}
