//! Extractors whose rejections are `problem+json` like every other error,
//! and the three kinds of bearer credentials.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use upload_once_core::ErrorCode;

use crate::error::{Error, Result};
use crate::secrets::{constant_time_eq, token_hash};
use crate::state::AppState;
use crate::store::{EventRow, SessionRow};

/// A JSON body; malformed input becomes a 4xx problem.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> Error {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            Error::problem(ErrorCode::UnsupportedMediaType, "send the body as JSON with Content-Type: application/json")
        }
        JsonRejection::JsonDataError(e) => {
            let text = e.body_text();
            // uuid's deserializer names itself: a body id that is not a UUID.
            let code =
                if text.contains("UUID parsing failed") { ErrorCode::InvalidId } else { ErrorCode::MalformedRequest };
            Error::problem(code, text)
        }
        JsonRejection::JsonSyntaxError(e) => Error::problem(ErrorCode::MalformedRequest, e.body_text()),
        JsonRejection::BytesRejection(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
            Error::problem(ErrorCode::PayloadTooLarge, "the request body is too large")
        }
        other => Error::problem(ErrorCode::MalformedRequest, other.body_text()),
    }
}

/// Path parameters; a malformed id becomes `400 invalid_id`.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(ApiPath(value)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                Err(Error::problem(ErrorCode::InvalidId, format!("malformed path parameter: {}", e.body_text())))
            }
            Err(other) => Err(Error::problem(ErrorCode::InvalidId, other.body_text())),
        }
    }
}

/// Query parameters; malformed ones become `400 invalid_query`.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => {
                Err(Error::problem(ErrorCode::InvalidQuery, e.body_text()))
            }
            Err(other) => Err(Error::problem(ErrorCode::InvalidQuery, other.body_text())),
        }
    }
}

/// The bearer token of a request, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

fn missing_bearer() -> Error {
    Error::problem(ErrorCode::Unauthorized, "send Authorization: Bearer <token>")
}

/// Requires the admin token.
pub fn require_admin(state: &AppState, headers: &HeaderMap) -> Result<()> {
    let token = bearer(headers).ok_or_else(missing_bearer)?;
    if constant_time_eq(token, &state.admin_token) {
        Ok(())
    } else {
        Err(Error::problem(ErrorCode::Forbidden, "this token may not create events"))
    }
}

/// Requires a live guest session.
pub async fn require_session(state: &AppState, headers: &HeaderMap) -> Result<SessionRow> {
    let token = bearer(headers).ok_or_else(missing_bearer)?;
    state.records.session_by_token_hash(&token_hash(token), state.now()).await?.ok_or_else(|| {
        Error::problem(ErrorCode::InvalidSession, "the guest session is unknown or has expired; join the event again")
    })
}

/// Requires the host token of `event`.
pub fn require_host(headers: &HeaderMap, event: &EventRow) -> Result<()> {
    let token = bearer(headers).ok_or_else(missing_bearer)?;
    if constant_time_eq(&token_hash(token), &event.host_token_hash) {
        Ok(())
    } else {
        Err(Error::problem(ErrorCode::Forbidden, "only this event's host may do this"))
    }
}

/// An event by slug, or `404`.
pub async fn event(state: &AppState, slug: &str) -> Result<EventRow> {
    state.records.event_by_slug(slug).await?.ok_or_else(|| Error::not_found("event"))
}
