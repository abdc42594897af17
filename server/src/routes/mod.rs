//! The HTTP surface: [`app`] builds the whole router, testable without a
//! socket.

pub mod attempts;
pub mod events;
pub mod extract;
pub mod storage;

use std::time::Duration;

use axum::Json;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::services::ServeDir;
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use tracing::Level;
use upload_once_core::ErrorCode;
use upload_once_core::wire::Problem;
use utoipa::OpenApi;

use crate::error::{Result, problem_response};
use crate::openapi::ApiDoc;
use crate::state::AppState;
use crate::sweeper::{SweepReport, sweep_once};

/// The largest JSON body accepted (a status request of 500 ids fits).
pub const MAX_JSON_BYTES: usize = 64 * 1024;

/// `GET /healthz`
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "The server and its database answer")))]
pub async fn healthz(State(state): State<AppState>) -> Result<&'static str> {
    state.records.ping().await?;
    Ok("ok")
}

/// `GET /readyz`: whether the server should get traffic. It should not
/// while the database does not take writes (a small write is made to find
/// out); the answer then says why.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "The database takes writes"),
    (status = 503, body = Problem, content_type = "application/problem+json", description = "database_unavailable: why, in `detail`"),
))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    match crate::ops::probe_database(&state).await {
        Ok(()) => "ready".into_response(),
        Err(e) => problem_response(ErrorCode::DatabaseUnavailable, format!("the database does not take writes: {e}")),
    }
}

/// `GET /openapi.json`
pub async fn openapi() -> Response {
    let mut response = Json(ApiDoc::openapi()).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `POST /v1/admin/sweep` (admin): runs the sweeper now.
#[utoipa::path(post, path = "/v1/admin/sweep", tag = "operations", security(("admin" = [])),
    responses((status = 200, body = SweepReport)))]
pub async fn admin_sweep(State(state): State<AppState>, headers: HeaderMap) -> Result<Json<SweepReport>> {
    extract::require_admin(&state, &headers)?;
    Ok(Json(sweep_once(&state).await?))
}

/// `POST /v1/admin/test-hooks` (admin, only with `--test-hooks`).
pub async fn admin_test_hooks(
    State(state): State<AppState>,
    headers: HeaderMap,
    extract::ApiJson(request): extract::ApiJson<crate::test_hooks::TestHooksRequest>,
) -> Result<&'static str> {
    let Some(hooks) = &state.test_hooks else {
        return Err(crate::error::Error::problem(ErrorCode::RouteNotFound, "no such route"));
    };
    extract::require_admin(&state, &headers)?;
    hooks.set(&request);
    Ok("ok")
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
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::OPTIONS])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_NONE_MATCH,
            HeaderName::from_static("idempotency-key"),
            HeaderName::from_static("x-guest-code"),
            HeaderName::from_static("x-amz-checksum-sha256"),
        ])
        .expose_headers([header::ETAG, header::RETRY_AFTER])
        .max_age(Duration::from_secs(600))
}

/// The whole HTTP API, the embedded storage endpoint, and (when configured)
/// the web pages and the npm package.
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/openapi.json", get(openapi))
        .route("/v1/events", post(events::create_event))
        .route("/v1/events/{slug}/sessions", post(events::create_session))
        .route("/v1/events/{slug}/attempts", post(attempts::authorize))
        .route("/v1/events/{slug}/media", get(events::list_media))
        .route("/v1/events/{slug}/wall", get(events::wall))
        .route("/v1/attempts/status", post(attempts::status_batch))
        .route("/v1/attempts/{id}", get(attempts::status))
        .route("/v1/attempts/{id}/confirm", post(attempts::confirm))
        .route("/v1/attempts/{id}/renew", post(attempts::renew))
        .route("/v1/media/{id}/moderation", post(events::moderate))
        .route("/v1/media/{id}/content", get(storage::media_content))
        .route("/v1/admin/sweep", post(admin_sweep))
        .route("/v1/admin/test-hooks", post(admin_test_hooks))
        .layer(DefaultBodyLimit::max(MAX_JSON_BYTES))
        .route("/storage/{*key}", put(storage::put_object))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::ops::run_to_completion));

    let mut router = api.method_not_allowed_fallback(method_not_allowed);
    let config = &state.config;
    if let Some(pkg) = config.pkg_dir.clone().or_else(|| Some("pkg".into()).filter(|p: &std::path::PathBuf| p.is_dir())) {
        router = router.nest_service("/pkg", ServeDir::new(pkg));
    }
    let www = config.www_dir.clone().or_else(|| Some("www".into()).filter(|p: &std::path::PathBuf| p.is_dir()));
    router = match www {
        Some(www) => router.fallback_service(
            ServeDir::new(www)
                .call_fallback_on_method_not_allowed(true)
                .not_found_service(axum::routing::any(route_not_found)),
        ),
        None => router.fallback(route_not_found),
    };
    router
        .layer(cors(&config.allowed_origins))
        .layer(CatchPanicLayer::custom(panic_response))
        // A failing database is logged once per outage by the health record
        // (`ops`), not once per response.
        .layer(TraceLayer::new_for_http().on_failure(DefaultOnFailure::new().level(Level::DEBUG)))
        .with_state(state)
}
