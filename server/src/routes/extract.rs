//! Extractors whose rejections are `problem+json` like every other error,
//! and the three kinds of bearer credentials.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use upload_once_core::ErrorCode;

use crate::error::{Error, Result};
use crate::secrets::{constant_time_eq, token_hash};
use crate::state::{AdminToken, Records};
use crate::store::{EventRow, MediaRow, SessionRow};

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
pub fn require_admin(admin: &AdminToken, headers: &HeaderMap) -> Result<()> {
    let token = bearer(headers).ok_or_else(missing_bearer)?;
    if constant_time_eq(token, &admin.0) {
        Ok(())
    } else {
        Err(Error::problem(ErrorCode::Forbidden, "this token may not create events"))
    }
}

/// Requires a guest session the server knows, live or lapsed: a lapsed
/// session still asks about, renews and confirms its own attempts; only a
/// new authorization needs it live ([`SessionRow::is_live`]).
pub async fn require_session(records: &Records, headers: &HeaderMap) -> Result<SessionRow> {
    let token = bearer(headers).ok_or_else(missing_bearer)?;
    let session = records.session_by_token_hash(&token_hash(token)).await?.ok_or_else(|| {
        Error::problem(ErrorCode::InvalidSession, "the guest session is unknown; join the event again")
    })?;
    if session.revoked {
        return Err(Error::problem(ErrorCode::SessionRevoked, "the event's host removed this guest"));
    }
    Ok(session)
}

/// `401 invalid_session` for a lapsed session asking for something new.
pub fn lapsed_session() -> Error {
    Error::problem(ErrorCode::InvalidSession, "the guest session has expired; join the event again for new uploads")
}

// Credentials are extractors that run before the path, the query and the
// body are read: a request without a valid credential is refused (401, 403)
// before anything it sent is parsed or validated.

/// The admin token.
pub struct Admin;

impl<S: Send + Sync> FromRequestParts<S> for Admin
where
    AdminToken: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        require_admin(&AdminToken::from_ref(state), &parts.headers).map(|()| Admin)
    }
}

/// A guest session the server knows, live or lapsed ([`require_session`]).
pub struct Session(pub SessionRow);

impl<S: Send + Sync> FromRequestParts<S> for Session
where
    Records: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        require_session(&Records::from_ref(state), &parts.headers).await.map(Session)
    }
}

/// The host of the event named by the path's `{slug}` (looked up first: an
/// unknown event is `404` whatever the token).
pub struct HostOfEvent(pub EventRow);

impl<S: Send + Sync> FromRequestParts<S> for HostOfEvent
where
    Records: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let ApiPath(slug) = ApiPath::<String>::from_request_parts(parts, state).await?;
        let event = event(&Records::from_ref(state), &slug).await?;
        require_host(&parts.headers, &event)?;
        Ok(HostOfEvent(event))
    }
}

/// The host of the event of the media the path's `{id}` names: no token is
/// `401`; an unknown media `404`; a token that is not that event's host
/// token (a guest's, another event's host's) `403`.
pub struct HostOfMedia {
    /// The media record.
    pub media: MediaRow,
    /// Its event.
    pub event: EventRow,
}

impl<S: Send + Sync> FromRequestParts<S> for HostOfMedia
where
    Records: FromRef<S>,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let records = Records::from_ref(state);
        let token = bearer(&parts.headers)
            .ok_or_else(|| Error::problem(ErrorCode::Unauthorized, "send Authorization: Bearer <host token>"))?
            .to_owned();
        let ApiPath(id) = ApiPath::<uuid::Uuid>::from_request_parts(parts, state).await?;
        let media = records.media(id).await?.ok_or_else(|| Error::not_found("media"))?;
        let event = records.event_by_id(media.event_id).await?.ok_or_else(|| Error::not_found("media"))?;
        if !constant_time_eq(&token_hash(&token), &event.host_token_hash) {
            // Guests and other events' hosts alike.
            return Err(Error::problem(ErrorCode::Forbidden, "only this event's host may moderate its media"));
        }
        Ok(HostOfMedia { media, event })
    }
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
pub async fn event(records: &Records, slug: &str) -> Result<EventRow> {
    records.event_by_slug(slug).await?.ok_or_else(|| Error::not_found("event"))
}
