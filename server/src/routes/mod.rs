//! The HTTP surface: [`app`] builds the whole router, testable without a
//! socket. Each API route is declared once, by its handler's
//! `#[utoipa::path]` (method and path), and listed once, in [`api`]: the
//! router and the OpenAPI document both come from that list.

pub mod admission;
pub mod assets;
pub mod attempts;
pub mod bulk;
pub mod events;
pub mod extract;
pub mod host_list;
pub mod media;
pub mod metrics;
pub mod operations;
pub mod problems;
pub mod storage;

use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{Predicate, SizeAbove};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use tracing::Level;
use upload_once_core::ErrorCode;
use upload_once_core::wire::Problem;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{Result, problem_response};
use crate::openapi::ApiDoc;
use crate::services::sweeper::{SweepReport, sweep_once};
use crate::state::{AppState, Records};

/// The largest JSON body accepted (a status request of 500 ids fits).
pub const MAX_JSON_BYTES: usize = 64 * 1024;

/// `GET /healthz`
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "The server and its database answer")))]
pub async fn healthz(State(records): State<Records>) -> Result<&'static str> {
    records.ping().await?;
    Ok("ok")
}

/// `GET /readyz`: whether the server should get traffic. It should not
/// while the database does not take writes (a small write is made to find
/// out) or the object store cannot take uploads (a cheap probe: a small
/// file written where uploads land, or a `HEAD` of the bucket). Probed at
/// most once a second ([`operations::readiness`]). Anyone learns ready or
/// not ready; why, in the database's or the store's own words, only with
/// the admin token.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "The database takes writes and the object store answers: `ready`; with the admin token, a line says whether videos get a poster and a shareable MP4 (ffmpeg found) or the placeholder only, and why, and one the same of HEIC photos (heif-convert)"),
    (status = 503, body = Problem, content_type = "application/problem+json",
        description = "not_ready; with the admin token, database_unavailable or object_store_unavailable and why, in `detail` (the database's reason first when both fail)"),
))]
pub async fn readyz(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let admin = extract::require_admin(&state.admin_token, &headers).is_ok();
    let Some((code, reason)) = operations::readiness(&state).await else {
        // The admin also learns how videos are handled here.
        if !admin {
            return "ready".into_response();
        }
        let videos = match &state.media.video {
            Ok(tools) => format!("videos: posters and shareable MP4s ({})", tools.version),
            Err(why) => format!("videos: the placeholder only ({why})"),
        };
        let heic = match &state.media.heic {
            Ok(tools) => format!("HEIC photos: decoded by heif-convert ({})", tools.version),
            Err(why) => format!("HEIC photos: the placeholder only ({why})"),
        };
        return format!("ready\n{videos}\n{heic}").into_response();
    };
    if admin {
        problem_response(code, reason)
    } else {
        problem_response(ErrorCode::NotReady, "the server is not ready".to_owned())
    }
}

/// `GET /openapi.json`: the document [`api`] makes.
fn openapi(doc: utoipa::openapi::OpenApi) -> axum::routing::MethodRouter<AppState> {
    let doc = std::sync::Arc::new(doc);
    get(async move || {
        let mut response = Json(doc.as_ref()).into_response();
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    })
}

/// `POST /v1/admin/sweep` (admin): runs the sweeper now.
#[utoipa::path(post, path = "/v1/admin/sweep", tag = "operations", security(("admin" = [])),
    responses((status = 200, body = SweepReport)))]
pub async fn admin_sweep(State(state): State<AppState>, headers: HeaderMap) -> Result<Json<SweepReport>> {
    extract::require_admin(&state.admin_token, &headers)?;
    Ok(Json(sweep_once(&state).await?))
}

/// `POST /v1/admin/test-hooks` (admin, only with `--test-hooks`, in a build
/// with the `test-hooks` feature). Without the flag the route answers like
/// no route; with it, the admin token is checked before the body is read.
#[cfg(feature = "test-hooks")]
pub async fn admin_test_hooks(State(state): State<AppState>, request: axum::extract::Request) -> Result<&'static str> {
    let Some(hooks) = state.test_hooks.clone() else {
        return Err(crate::error::Error::problem(ErrorCode::RouteNotFound, "no such route"));
    };
    extract::require_admin(&state.admin_token, request.headers())?;
    use axum::extract::FromRequest;
    let extract::ApiJson(request) =
        extract::ApiJson::<crate::test_hooks::TestHooksRequest>::from_request(request, &state).await?;
    hooks.set(&request);
    if request.panic {
        panic!("a test hook asked this handler to panic");
    }
    Ok("ok")
}

/// Whether an answer is JSON: `application/json` and
/// `application/problem+json`. With [`SizeAbove`] 1 KiB, what is
/// compressed (the host's list of a festival is hundreds of kilobytes).
/// Media, pages (sent precompressed), the storage PUT's answers and the
/// live wall's events are left as they are.
fn is_json(_: axum::http::StatusCode, _: axum::http::Version, headers: &HeaderMap, _: &axum::http::Extensions) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("application/problem+json"))
}

async fn route_not_found() -> Response {
    problem_response(ErrorCode::RouteNotFound, "no such route".into())
}

async fn method_not_allowed() -> Response {
    problem_response(ErrorCode::MethodNotAllowed, "this route does not take that method".into())
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    problem_response(ErrorCode::Internal, "an unexpected server error".into())
}

fn cors(origins: &[String]) -> CorsLayer {
    let origins: Vec<HeaderValue> = origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()).collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_NONE_MATCH,
            HeaderName::from_static("idempotency-key"),
            HeaderName::from_static("x-guest-code"),
            HeaderName::from_static("x-amz-checksum-sha256"),
        ])
        .expose_headers([header::ETAG, header::RETRY_AFTER, HeaderName::from_static(crate::logs::REQUEST_ID)])
        .max_age(Duration::from_secs(600))
}

/// Every API route, each with its OpenAPI operation. Bodies are limited
/// to [`MAX_JSON_BYTES`], except the storage PUT's; every handler but the
/// metrics' runs to its end even when its client hangs up
/// ([`operations::run_to_completion`]). `POST /v1/admin/test-hooks` (only
/// in a build with the `test-hooks` feature) is routed but not documented.
pub fn api(state: &AppState) -> OpenApiRouter<AppState> {
    let api = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(events::create_event))
        .routes(routes!(events::delete_event))
        .routes(routes!(events::rotate))
        .routes(routes!(events::revoke_guest))
        .routes(routes!(events::create_session))
        .routes(routes!(attempts::authorize))
        .routes(routes!(host_list::list_media))
        .routes(routes!(events::wall))
        .routes(routes!(attempts::status_batch))
        .routes(routes!(attempts::status, attempts::withdraw))
        .routes(routes!(attempts::confirm))
        .routes(routes!(attempts::renew))
        .routes(routes!(attempts::sign_parts))
        .routes(routes!(events::moderate))
        .routes(routes!(bulk::start))
        .routes(routes!(bulk::progress))
        .routes(routes!(media::original))
        .routes(routes!(media::display))
        .routes(routes!(media::thumb))
        .routes(routes!(media::wall_live))
        .routes(routes!(media::invite))
        .routes(routes!(media::archive_link))
        .routes(routes!(media::archive))
        .routes(routes!(admin_sweep));
    #[cfg(feature = "test-hooks")]
    let api = api.route("/v1/admin/test-hooks", axum::routing::post(admin_test_hooks));
    api.layer(DefaultBodyLimit::max(MAX_JSON_BYTES))
        .routes(routes!(storage::put_object))
        .layer(axum::middleware::from_fn_with_state(state.clone(), operations::run_to_completion))
        // Only reads what is kept: no durable work, and not itself a
        // request in flight.
        .routes(routes!(metrics::serve))
}

/// What the metrics' own listener serves (`--metrics-listen`): `GET
/// /metrics` alone.
pub fn metrics_app(state: AppState) -> Router {
    Router::new()
        .route("/metrics", axum::routing::get(metrics::serve))
        .layer(axum::Extension(metrics::MetricsListener))
        .with_state(state)
}

/// The whole HTTP API, the embedded storage endpoint, and (when configured)
/// the web pages and the npm package.
pub fn app(state: AppState) -> Router {
    let (api, doc) = api(&state).split_for_parts();
    let api = api.route("/openapi.json", openapi(crate::openapi::finish(doc)));

    let router = api.method_not_allowed_fallback(method_not_allowed);
    let config = &state.config;
    let pkg = config.pkg_dir.clone().or_else(|| Some("pkg".into()).filter(|p: &std::path::PathBuf| p.is_dir()));
    let www = config.www_dir.clone().or_else(|| Some("www".into()).filter(|p: &std::path::PathBuf| p.is_dir()));
    let router = assets::mount(router, pkg, www, axum::routing::any(route_not_found));
    let request_id = HeaderName::from_static(crate::logs::REQUEST_ID);
    router
        // Quotas and limits per request (inside CORS, so a 429 carries the
        // grant a browser needs to read its Retry-After).
        .layer(axum::middleware::from_fn_with_state(state.clone(), admission::admit))
        .layer(cors(&config.allowed_origins))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(CompressionLayer::new().gzip(true).compress_when(SizeAbove::new(1024).and(is_json)))
        .layer(axum::middleware::from_fn_with_state(state.clone(), metrics::count_requests))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        // A failing database is logged once per outage by the health record
        // (`ops`), not once per response.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(crate::logs::request_span)
                .on_failure(DefaultOnFailure::new().level(Level::DEBUG)),
        )
        // Every request gets an id (unless a load balancer gave it one).
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .with_state(state)
}
