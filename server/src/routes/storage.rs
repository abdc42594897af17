//! The embedded store's signed PUT endpoint (media are read back through
//! [`super::media`]).

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use upload_once_core::ErrorCode;
use upload_once_core::restrictions::normalize_content_type;
use upload_once_core::wire::{AttemptState, Problem};

use super::extract::{ApiPath, ApiQuery};
use crate::error::{Error, Result};
use std::sync::Arc;

use crate::limits::{ClientAddress, Limits};
use crate::state::{Lifetimes, LocalStore, Records};
use crate::storage::local::{Commit, LocalObjectStore, SignedQuery, SignedTarget};
use crate::store::AttemptRow;

/// `PUT /storage/{key}`: receives the bytes of one attempt, or of one part
/// of a multipart attempt, through a signed URL.
#[utoipa::path(put, path = "/storage/{*key}", tag = "storage",
    params(("key" = String, Path, description = "Object key, as signed"), SignedQuery),
    request_body(content = Vec<u8>, content_type = "*/*", description = "Exactly the signed length; an object with the signed Content-Type"),
    responses(
        (status = 200, description = "Stored (or the same bytes were already stored); ETag is the SHA-256"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "length_mismatch, content_type_mismatch, incomplete_body, invalid_query"),
        (status = 408, body = Problem, content_type = "application/problem+json", description = "request_timeout: no byte of the body arrived for --put-idle-timeout (retryable)"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "checksum_mismatch: the bytes do not have the signed SHA-256"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "url_expired (a part's URL also when it expires before its last byte), bad_signature"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "already_confirmed: a confirmed object never changes"),
        (status = 410, body = Problem, content_type = "application/problem+json", description = "expired: the attempt is over, or the part's upload was completed or aborted; withdrawn: its guest withdrew it"),
        (status = 412, body = Problem, content_type = "application/problem+json", description = "object_exists: different bytes are stored (under the key, or as the part)"),
    ))]
#[allow(clippy::too_many_arguments)]
pub async fn put_object(
    State(records): State<Records>,
    State(local_store): State<LocalStore>,
    State(lifetimes): State<Lifetimes>,
    State(limits): State<Arc<Limits>>,
    ApiPath(key): ApiPath<String>,
    ApiQuery(query): ApiQuery<SignedQuery>,
    client: Option<axum::Extension<ClientAddress>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let Some(store) = local_store.as_deref() else {
        return Err(Error::problem(ErrorCode::RouteNotFound, "this server does not store objects itself"));
    };
    let target = store.verify(&key, &query, lifetimes.now())?;
    if let SignedTarget::Object { content_type: signed } = &target {
        let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(normalize_content_type);
        if content_type.as_deref() != Some(signed.as_str()) {
            return Err(Error::problem(
                ErrorCode::ContentTypeMismatch,
                format!("send Content-Type: {signed} as the URL was signed for"),
            ));
        }
    }
    if let Some(length) = headers.get(header::CONTENT_LENGTH) {
        if length.to_str().ok().and_then(|l| l.parse::<u64>().ok()) != Some(query.len) {
            return Err(Error::problem(
                ErrorCode::LengthMismatch,
                format!("the URL was signed for exactly {} bytes", query.len),
            ));
        }
    }
    // The attempt the bytes are for, while it takes them.
    let live_attempt = async || -> Result<AttemptRow> {
        let attempt = records.attempt_by_object_key(&key).await?;
        let now = lifetimes.now();
        let withdrawn = |a: &AttemptRow| a.reject_code.as_deref() == Some(ErrorCode::Withdrawn.as_str());
        match attempt {
            Some(a) if a.state == AttemptState::Authorized && now < a.expires_at => Ok(a),
            Some(a) if a.state == AttemptState::Confirmed => Err(Error::problem(
                ErrorCode::AlreadyConfirmed,
                "this object belongs to a confirmed attempt and cannot change",
            )),
            Some(a) if a.state == AttemptState::Rejected && withdrawn(&a) => {
                Err(Error::problem(ErrorCode::Withdrawn, "this upload was withdrawn by its guest"))
            }
            Some(a) if a.state == AttemptState::Rejected => {
                Err(Error::problem(ErrorCode::Expired, "this attempt was rejected"))
            }
            // Authorized past its expiry, expired, or unknown.
            _ => Err(Error::problem(ErrorCode::Expired, "this attempt has expired")),
        }
    };
    let attempt_allows_upload = async || live_attempt().await.map(drop);
    // One PUT per target at a time, whichever of its URLs it came with,
    // however spelled (the object, or one part of one upload), and the
    // client address's cap: checked before the database is read.
    let refused = |refused: crate::limits::PutRefused| {
        tracing::debug!("storage PUT refused: {}", refused.detail());
        Error::problem(ErrorCode::RateLimited, refused.detail())
    };
    let put_target = crate::limits::put_target(uri.path(), uri.query());
    let reserved = limits.puts.reserve(client.map(|c| c.0.0), put_target, &limits.config).map_err(refused)?;
    // Cheap refusal before reading any bytes; checked again at commit.
    let attempt = live_attempt().await?;
    // A slot of the PUTs' pool, by the event's and the session's fair
    // shares when it runs short (crate::put_slots); held until the answer
    // (or the client's hang-up), and cut if another event or session needs
    // it more.
    let slot = reserved.admit(attempt.event_id, attempt.session_id, &limits.config).map_err(refused)?;
    // A body that stops arriving, crawls, or outlives its URL is cut, and
    // its temporary file removed.
    let config = &limits.config;
    let idle = config.put_idle_timeout;
    let until_ms = (query.exp * 1000 + config.put_expiry_grace.as_millis() as i64 - lifetimes.now()).max(0);
    let limits = crate::limits::BodyLimits {
        idle,
        min_rate: config.put_min_rate,
        window: config.put_rate_window,
        until: std::time::Duration::from_millis(until_ms as u64),
    };
    let (body, stalled) = crate::limits::IdleBody::new(body.into_data_stream(), limits);
    let body = body.cut_when(slot.cut());
    let received = store.receive(body, query.len).await.map_err(|e| stalled.explain(e, idle))?;
    if received.size != query.len {
        return Err(Error::problem(
            ErrorCode::IncompleteBody,
            format!("received {} of the {} signed bytes", received.size, query.len),
        ));
    }
    if let Some(expected) = &query.sha {
        if *expected != received.sha256 {
            return Err(Error::problem(ErrorCode::ChecksumMismatch, "the bytes do not have the signed SHA-256"));
        }
    }
    let sha256 = match target {
        SignedTarget::Object { content_type } => {
            match store.commit(&key, &content_type, received, attempt_allows_upload).await? {
                Commit::Stored(meta) | Commit::AlreadyStored(meta) => meta.sha256.unwrap_or_default(),
            }
        }
        // A part lands only while its URL holds: one that expired before its
        // last byte is refused, and signed again.
        SignedTarget::Part { upload_id, number } => {
            let allow = async || -> Result<()> {
                LocalObjectStore::check_expiry(&query, lifetimes.now())?;
                attempt_allows_upload().await
            };
            store.commit_part(&upload_id, number, received, allow).await?
        }
    };
    // Bytes arrived: the attempt's reservation lasts as long as a URL
    // signed now would.
    records.reserve(attempt.row_id, lifetimes.reservation_until(attempt.expires_at)).await?;
    let mut response = StatusCode::OK.into_response();
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{sha256}\"")) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    Ok(response)
}
