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
use std::sync::Arc;

use crate::media::MediaServices;
use crate::metrics::Metrics;
use crate::ops::Ops;
use crate::state::Records;

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

/// Marks the requests of the metrics' own listener (`--metrics-listen`).
#[derive(Clone, Copy, Debug)]
pub struct MetricsListener;

/// `GET /metrics`: every metric, from counters and gauges kept in memory:
/// no scrape reads the database (the sweep backlog is the sweeper's last
/// pass's), so one costs the same however often it comes. With
/// `--metrics-listen`, it is served on that address alone, and the public
/// listener answers `404` for it.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, content_type = "application/openmetrics-text", body = String, description = "Prometheus metrics (OpenMetrics text); see docs/deploy.md"),
    (status = 404, body = upload_once_core::wire::Problem, content_type = "application/problem+json", description = "route_not_found: with --metrics-listen, metrics are served on that address only"),
))]
pub async fn serve(
    State(ops): State<Arc<Ops>>,
    State(records): State<Records>,
    State(config): State<Arc<crate::config::Config>>,
    State(media): State<Arc<MediaServices>>,
    State(metrics): State<Arc<Metrics>>,
    listener: Option<axum::Extension<MetricsListener>>,
) -> Response {
    if config.metrics_listen.is_some() && listener.is_none() {
        return crate::error::problem_response(ErrorCode::RouteNotFound, "no such route".into());
    }
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
    if let Some(backlog) = ops.sweep_backlog() {
        {
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
