//! Attempts: authorize (create-or-return), status, renew, and confirm
//! (create-or-return the media record, exactly once).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use futures_util::StreamExt;
use upload_once_core::ErrorCode;
use upload_once_core::restrictions::{
    Restrictions, check_filename, check_sha256, is_valid_content_type, normalize_content_type,
};
use upload_once_core::time::format_rfc3339;
use upload_once_core::wire::{
    AttemptResponse, AttemptState, AttemptStatus, AuthorizeRequest, ConfirmRequest, MAX_STATUS_IDS,
    Media, Moderation, ModerationPolicy, Problem, Rejection, StatusRequest, StatusResponse, Upload,
};
use uuid::Uuid;

use super::extract::{ApiJson, ApiPath, event, require_session};
use crate::error::{Error, Result};
use crate::metrics::ConfirmOutcome;
use crate::secrets::new_object_key;
use crate::state::AppState;
use crate::storage::PutGrant;
use crate::store::{AttemptRow, MediaRow, NewAttempt, NewMedia, SessionRow};

/// The attempt as `authorize` and `renew` answer it, with a fresh signed
/// URL while it is authorized.
fn attempt_response(state: &AppState, a: &AttemptRow, media: Option<&MediaRow>) -> AttemptResponse {
    let now = state.now();
    let upload = (a.state == AttemptState::Authorized).then(|| {
        // Never let a URL outlive its attempt.
        let expires_at = (now + state.url_ttl_ms()).min(a.expires_at);
        Upload::Put(state.objects.presign_put(&PutGrant {
            key: &a.object_key,
            content_type: &a.content_type,
            size: a.size,
            sha256: a.sha256.as_deref(),
            expires_at,
        }))
    });
    AttemptResponse {
        id: a.id,
        state: a.state,
        object_key: a.object_key.clone(),
        upload,
        expires_at: format_rfc3339(a.expires_at),
        media: media.map(|m| state.media_summary(m)),
        rejection: rejection(a),
    }
}

fn rejection(a: &AttemptRow) -> Option<Rejection> {
    (a.state == AttemptState::Rejected).then(|| Rejection {
        code: a.reject_code.clone().unwrap_or_else(|| "rejected".into()),
        reason: a.reject_reason.clone().unwrap_or_else(|| "rejected".into()),
    })
}

fn rejected_error(a: &AttemptRow) -> Error {
    let r = rejection(a).unwrap_or(Rejection {
        code: "rejected".into(),
        reason: "rejected".into(),
    });
    Error::problem(
        ErrorCode::parse(&r.code).unwrap_or(ErrorCode::SizeMismatch),
        r.reason,
    )
}

fn expired_error() -> Error {
    Error::problem(
        ErrorCode::Expired,
        "this attempt expired before it was confirmed; start a new one",
    )
}

/// Whether an attempt is past its expiry (even if the sweeper has not run).
fn is_expired(state: &AppState, a: &AttemptRow) -> bool {
    a.state == AttemptState::Expired
        || (a.state == AttemptState::Authorized && state.now() >= a.expires_at)
}

/// `POST /v1/events/{slug}/attempts`
#[utoipa::path(post, path = "/v1/events/{slug}/attempts", tag = "guests",
    params(("slug" = String, Path, description = "Event slug")),
    request_body = AuthorizeRequest,
    security(("session" = [])),
    responses(
        (status = 201, body = AttemptResponse, description = "Authorized now"),
        (status = 200, body = AttemptResponse, description = "The same id and parameters again: the same attempt, a fresh URL"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "malformed_request, invalid_id"),
        (status = 401, body = Problem, content_type = "application/problem+json", description = "unauthorized, invalid_session"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "forbidden: the session belongs to another event"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "no such event"),
        (status = 410, body = Problem, content_type = "application/problem+json", description = "expired"),
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "id_reused, file_too_large, type_not_allowed, empty_file, invalid_filename, invalid_checksum"),
    ))]
pub async fn authorize(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(slug): ApiPath<String>,
    ApiJson(req): ApiJson<AuthorizeRequest>,
) -> Result<(StatusCode, Json<AttemptResponse>)> {
    let session = require_session(&state, &headers).await?;
    let event = event(&state, &slug).await?;
    if session.event_id != event.id {
        return Err(Error::problem(
            ErrorCode::Forbidden,
            "this session belongs to another event",
        ));
    }
    // Everything is checked before anything is stored.
    check_filename(&req.filename)?;
    let content_type = normalize_content_type(&req.content_type);
    if !is_valid_content_type(&content_type) {
        return Err(Error::problem(
            ErrorCode::TypeNotAllowed,
            format!("`{}` is not a content type", req.content_type),
        ));
    }
    if let Some(sha) = &req.sha256 {
        check_sha256(sha)?;
    }
    let limits = Restrictions {
        max_file_bytes: Some(event.max_file_bytes),
        allowed_types: event.allowed_types.clone(),
    };
    limits.check(req.size, &content_type)?;

    let now = state.now();
    let (row, created) = state
        .records
        .authorize(NewAttempt {
            id: req.id,
            session_id: session.id,
            event_id: event.id,
            filename: req.filename.clone(),
            size: req.size,
            content_type: content_type.clone(),
            sha256: req.sha256.clone(),
            object_key: new_object_key(&event.slug),
            created_at: now,
            expires_at: now + state.attempt_ttl_ms(),
        })
        .await?;
    if row.filename != req.filename
        || row.size != req.size
        || row.content_type != content_type
        || row.sha256 != req.sha256
    {
        return Err(Error::problem(
            ErrorCode::IdReused,
            "this attempt id was already used for a different file; mint a new id for a new file",
        ));
    }
    if is_expired(&state, &row) {
        return Err(expired_error());
    }
    // The session must outlive every attempt it authorizes, or the guest could
    // never confirm (nor ask about) an attempt made late in the session.
    state
        .records
        .extend_session(session.id, row.expires_at)
        .await?;
    let media = match row.state {
        AttemptState::Confirmed => state.records.media_for_attempts(&[row.row_id]).await?.pop(),
        _ => None,
    };
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(attempt_response(&state, &row, media.as_ref()))))
}

/// `POST /v1/attempts/{id}/renew`
#[utoipa::path(post, path = "/v1/attempts/{id}/renew", tag = "guests",
    params(("id" = Uuid, Path, description = "Attempt id")),
    security(("session" = [])),
    responses(
        (status = 200, body = AttemptResponse, description = "A fresh signed URL"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "already_confirmed"),
        (status = 410, body = Problem, content_type = "application/problem+json", description = "expired"),
    ))]
pub async fn renew(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<AttemptResponse>> {
    let session = require_session(&state, &headers).await?;
    let row = state
        .records
        .attempt(session.id, id)
        .await?
        .ok_or_else(|| Error::not_found("attempt"))?;
    if is_expired(&state, &row) {
        return Err(expired_error());
    }
    match row.state {
        AttemptState::Authorized => Ok(Json(attempt_response(&state, &row, None))),
        AttemptState::Confirmed => Err(Error::problem(
            ErrorCode::AlreadyConfirmed,
            "this attempt is already confirmed",
        )),
        AttemptState::Rejected => Err(rejected_error(&row)),
        AttemptState::Expired => Err(expired_error()),
    }
}

/// What each attempt's status is, in request order.
pub async fn statuses(
    state: &AppState,
    session: &SessionRow,
    ids: &[Uuid],
) -> Result<Vec<AttemptStatus>> {
    let rows = state.records.attempts(session.id, ids).await?;
    let confirmed: Vec<i64> = rows
        .iter()
        .filter(|a| a.state == AttemptState::Confirmed)
        .map(|a| a.row_id)
        .collect();
    let media = state.records.media_for_attempts(&confirmed).await?;
    // HEAD the objects of live authorized attempts, a few at a time.
    let live: Vec<(i64, String)> = rows
        .iter()
        .filter(|a| a.state == AttemptState::Authorized && !is_expired(state, a))
        .map(|a| (a.row_id, a.object_key.clone()))
        .collect();
    let objects = state.objects.clone();
    let stored: Vec<(i64, bool)> = futures_util::stream::iter(live)
        .map(move |(row_id, key)| {
            let objects = objects.clone();
            async move { objects.head(&key).await.map(|h| (row_id, h.is_some())) }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    Ok(ids
        .iter()
        .map(|id| {
            let Some(a) = rows.iter().find(|a| a.id == *id) else {
                return AttemptStatus::NotFound { id: *id };
            };
            if is_expired(state, a) {
                return AttemptStatus::Expired { id: *id };
            }
            match a.state {
                AttemptState::Authorized => AttemptStatus::Authorized {
                    id: *id,
                    object_stored: stored.iter().any(|(row, s)| *row == a.row_id && *s),
                    expires_at: format_rfc3339(a.expires_at),
                    parts: None,
                },
                AttemptState::Confirmed => {
                    match media.iter().find(|m| m.attempt_row_id == a.row_id) {
                        Some(m) => AttemptStatus::Confirmed {
                            id: *id,
                            media: state.media_summary(m),
                        },
                        None => AttemptStatus::NotFound { id: *id },
                    }
                }
                AttemptState::Rejected => {
                    let r = rejection(a).expect("rejected attempts have a rejection");
                    AttemptStatus::Rejected {
                        id: *id,
                        code: r.code,
                        reason: r.reason,
                    }
                }
                AttemptState::Expired => AttemptStatus::Expired { id: *id },
            }
        })
        .collect())
}

/// `GET /v1/attempts/{id}`
#[utoipa::path(get, path = "/v1/attempts/{id}", tag = "guests",
    params(("id" = Uuid, Path, description = "Attempt id")),
    security(("session" = [])),
    responses(
        (status = 200, body = AttemptStatus, description = "`not_found` is an answer, not an error: unknown ids and other sessions' ids look the same"),
        (status = 401, body = Problem, content_type = "application/problem+json", description = "unauthorized, invalid_session"),
    ))]
pub async fn status(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<Json<AttemptStatus>> {
    let session = require_session(&state, &headers).await?;
    let mut all = statuses(&state, &session, &[id]).await?;
    Ok(Json(all.pop().unwrap_or(AttemptStatus::NotFound { id })))
}

/// `POST /v1/attempts/status`
#[utoipa::path(post, path = "/v1/attempts/status", tag = "guests",
    request_body = StatusRequest,
    security(("session" = [])),
    responses(
        (status = 200, body = StatusResponse),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "too_many_ids"),
    ))]
pub async fn status_batch(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<StatusRequest>,
) -> Result<Json<StatusResponse>> {
    let session = require_session(&state, &headers).await?;
    if req.ids.len() > MAX_STATUS_IDS {
        return Err(Error::problem(
            ErrorCode::TooManyIds,
            format!("at most {MAX_STATUS_IDS} ids per request"),
        ));
    }
    Ok(Json(StatusResponse {
        results: statuses(&state, &session, &req.ids).await?,
    }))
}

/// A mismatch between what was authorized and what was claimed or stored.
fn mismatch(
    a: &AttemptRow,
    what: &str,
    size: u64,
    content_type: &str,
    sha256: Option<&str>,
) -> Option<(ErrorCode, String)> {
    if size != a.size {
        return Some((
            ErrorCode::SizeMismatch,
            format!("{what} is {size} bytes but {} were authorized", a.size),
        ));
    }
    if content_type != a.content_type {
        return Some((
            ErrorCode::TypeMismatch,
            format!(
                "{what} is {content_type} but {} was authorized",
                a.content_type
            ),
        ));
    }
    if let (Some(expected), Some(actual)) = (a.sha256.as_deref(), sha256) {
        if expected != actual {
            return Some((
                ErrorCode::ChecksumMismatch,
                format!("{what} has SHA-256 {actual} but {expected} was authorized"),
            ));
        }
    }
    None
}

/// Confirms an attempt: create-or-return its media record, in one
/// transaction holding the attempt's row lock. Never read-then-insert.
/// Counts the outcome ([`ConfirmOutcome`]).
pub async fn confirm_attempt(
    state: &AppState,
    session: &SessionRow,
    id: Uuid,
    req: &ConfirmRequest,
) -> Result<MediaRow> {
    let result = confirm_under_lock(state, session, id, req).await;
    let outcome = match &result {
        Ok((_, outcome)) => Some(*outcome),
        Err(e) => ConfirmOutcome::of_error(e),
    };
    if let Some(outcome) = outcome {
        state.metrics.confirmed(outcome);
    }
    result.map(|(media, _)| media)
}

async fn confirm_under_lock(
    state: &AppState,
    session: &SessionRow,
    id: Uuid,
    req: &ConfirmRequest,
) -> Result<(MediaRow, ConfirmOutcome)> {
    // Read before the lock: inside it, only the locked transaction may touch
    // the database.
    let event = state
        .records
        .event_by_id(session.event_id)
        .await?
        .ok_or_else(|| Error::not_found("attempt"))?;
    let mut lock = state
        .records
        .lock_attempt(session.id, id)
        .await?
        .ok_or_else(|| Error::not_found("attempt"))?;
    let a = lock.attempt().clone();
    match a.state {
        AttemptState::Confirmed => {
            let media = lock.media().await?;
            lock.release().await?;
            return Ok((media, ConfirmOutcome::Replayed));
        }
        AttemptState::Rejected => {
            lock.release().await?;
            return Err(rejected_error(&a));
        }
        AttemptState::Expired => {
            lock.release().await?;
            return Err(expired_error());
        }
        AttemptState::Authorized => {}
    }
    if state.now() >= a.expires_at {
        lock.expire().await?;
        return Err(expired_error());
    }
    let claimed_type = normalize_content_type(&req.content_type);
    if let Some((code, reason)) = mismatch(
        &a,
        "the confirmed file",
        req.size,
        &claimed_type,
        req.sha256.as_deref(),
    ) {
        lock.reject(code.as_str(), &reason).await?;
        return Err(Error::problem(code, reason));
    }
    let head = match state.objects.head(&a.object_key).await {
        Ok(head) => head,
        Err(e) => {
            let _ = lock.release().await;
            return Err(e);
        }
    };
    let Some(object) = head else {
        lock.release().await?;
        return Err(Error::problem(
            ErrorCode::ObjectMissing,
            "the object is not stored yet; upload it, then confirm again",
        ));
    };
    if let Some((code, reason)) = mismatch(
        &a,
        "the stored object",
        object.size,
        &object.content_type,
        object.sha256.as_deref(),
    ) {
        lock.reject(code.as_str(), &reason).await?;
        return Err(Error::problem(code, reason));
    }
    // A checksum the client claims must hold for the stored bytes, even when
    // the authorization carried none.
    if let (Some(claimed), Some(stored)) = (req.sha256.as_deref(), object.sha256.as_deref()) {
        if claimed != stored {
            let reason = format!(
                "the stored object has SHA-256 {stored} but the client confirmed {claimed}"
            );
            lock.reject(ErrorCode::ChecksumMismatch.as_str(), &reason)
                .await?;
            return Err(Error::problem(ErrorCode::ChecksumMismatch, reason));
        }
    }
    let moderation = match event.moderation {
        ModerationPolicy::Required => Moderation::Pending,
        ModerationPolicy::None => Moderation::Approved,
    };
    let media = lock
        .confirm(NewMedia {
            id: Uuid::new_v4(),
            size: object.size,
            content_type: object.content_type,
            sha256: a.sha256.clone().or(object.sha256),
            moderation,
            created_at: state.now(),
        })
        .await?;
    Ok((media, ConfirmOutcome::Created))
}

/// `POST /v1/attempts/{id}/confirm`
#[utoipa::path(post, path = "/v1/attempts/{id}/confirm", tag = "guests",
    params(
        ("id" = Uuid, Path, description = "Attempt id"),
        ("Idempotency-Key" = String, Header, description = "The attempt id again"),
    ),
    request_body = ConfirmRequest,
    security(("session" = [])),
    responses(
        (status = 200, body = Media, description = "The media record; a repeat returns the same record"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "idempotency_key_missing, idempotency_key_mismatch"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "object_missing (retryable)"),
        (status = 410, body = Problem, content_type = "application/problem+json", description = "expired"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "size_mismatch, type_mismatch, checksum_mismatch: the attempt is rejected"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "object_store_unavailable, database_unavailable (retryable)"),
    ))]
pub async fn confirm(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(req): ApiJson<ConfirmRequest>,
) -> Result<Json<Media>> {
    let session = require_session(&state, &headers).await?;
    let key = headers.get("idempotency-key").ok_or_else(|| {
        Error::problem(
            ErrorCode::IdempotencyKeyMissing,
            "send Idempotency-Key: <attempt id>",
        )
    })?;
    let key = key
        .to_str()
        .ok()
        .and_then(|k| Uuid::parse_str(k.trim()).ok());
    if key != Some(id) {
        return Err(Error::problem(
            ErrorCode::IdempotencyKeyMismatch,
            "Idempotency-Key must be the attempt id",
        ));
    }
    let media = confirm_attempt(&state, &session, id, &req).await?;
    Ok(Json(state.media_json(&media)))
}
