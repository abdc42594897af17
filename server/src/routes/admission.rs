//! Admission: the per-request limits of [`crate::limits`] as the one
//! middleware ([`admit`]) that applies them; its answers are problem+json
//! like every other error.

use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use upload_once_core::ErrorCode;

use crate::error::problem_response;
use crate::limits::{Admission, ClientAddress, admission};
use crate::state::AppState;

/// A `429 rate_limited` answer that says when to come back (whole seconds,
/// rounded up, at least 1).
fn rate_limited(detail: &str, wait: Duration) -> Response {
    let mut response = problem_response(ErrorCode::RateLimited, detail.to_owned());
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

/// Middleware: the per-request limits, in order — the concurrency limit,
/// the client's rate for the route's class, then the whole-request time
/// limit of a JSON request. It runs outside the handler's own task
/// ([`crate::routes::operations::run_to_completion`]), so a request answered `408` here
/// still finishes the work it started.
pub async fn admit(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map(|m| m.as_str().to_owned());
    let limits = &state.limits;
    let (timed, class) = match admission(request.method(), route.as_deref()) {
        Admission::Free => return next.run(request).await,
        Admission::Counted { timed, class } => (timed, class),
        Admission::Put => {
            // Its slot is taken by the handler, once the signed URL is
            // checked and its attempt (event, session) read: the pool's
            // shares are per event and session (crate::put_slots).
            if let Some(client) = limits.client(&request) {
                request.extensions_mut().insert(ClientAddress(client));
            }
            return next.run(request).await;
        }
    };
    // Storage PUTs have their own pool, and requests waiting for a rendition
    // job hold no slot: neither counts here.
    let working = state
        .ops
        .requests_in_flight()
        .saturating_sub(limits.puts.in_flight())
        .saturating_sub(state.ops.waiting_for_jobs());
    if working >= limits.config.max_requests_in_flight {
        return rate_limited(
            "the server is handling as many requests as it may; try again in a moment",
            Duration::ZERO,
        );
    }
    let client = limits.client(&request);
    if let Some(client) = client {
        request.extensions_mut().insert(ClientAddress(client));
    }
    if let (Some(class), Some(client)) = (class, client) {
        if let Err(wait) = limits.check(class, client) {
            tracing::debug!(?class, %client, "rate limited");
            return rate_limited("too many requests of this kind from this address; try again after Retry-After", wait);
        }
    }
    if !timed {
        return next.run(request).await;
    }
    let limit = limits.config.request_timeout;
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => problem_response(
            ErrorCode::RequestTimeout,
            format!("the request took longer than {} s; anything it started still finishes", limit.as_secs_f64()),
        ),
    }
}
