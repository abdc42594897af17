//! Events, guest sessions, moderation and the wall.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde::Serialize;
use upload_once_core::ErrorCode;
use upload_once_core::restrictions::is_valid_type_pattern;
use upload_once_core::time::format_rfc3339;
use upload_once_core::wire::{
    CreateEventRequest, CreateEventResponse, CreateSessionRequest, EventInfo, ModerationRequest, Problem,
    SessionResponse, WallResponse,
};

use super::extract::{Admin, ApiJson, ApiPath, ApiQuery, HostOfEvent, HostOfMedia, bearer, event};
use super::problems::{CredentialRefused, NotFound, WallRefused};
use crate::error::{Error, Result};
use crate::secrets::{constant_time_eq, new_guest_code, new_token, token_hash};
use std::sync::Arc;

use upload_once_core::time::UnixMillis;

use crate::config::Config;
use crate::limits::Limits;
use crate::media::MediaServices;
use crate::state::{AppState, Lifetimes, Links, Records, Stores};
use crate::store::{Credential, EventRow, GuestRemoval, HostDecision};

/// The longest moderation reason kept.
const MAX_REASON_CHARS: usize = 500;
/// The most wall items one page returns.
const WALL_PAGE: u32 = 100;

/// The public description of an event, with the server's multipart
/// threshold (the client hashes smaller files whole before authorize).
pub fn event_info(config: &Config, e: &EventRow) -> EventInfo {
    EventInfo {
        slug: e.slug.clone(),
        title: e.title.clone(),
        max_file_bytes: e.max_file_bytes,
        allowed_types: e.allowed_types.clone(),
        moderation: e.moderation,
        dedup: e.dedup,
        multipart_threshold: Some(config.multipart_threshold),
    }
}

fn is_valid_slug(slug: &str) -> bool {
    (1..=64).contains(&slug.len())
        && !slug.starts_with('-')
        && slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Checks an event definition.
pub fn validate_event(req: &CreateEventRequest) -> Result<()> {
    let invalid = |detail: &str| Err(Error::problem(ErrorCode::InvalidEvent, detail.to_owned()));
    if !is_valid_slug(&req.slug) {
        return invalid("slug must be 1-64 characters of a-z, 0-9 and -, not starting with -");
    }
    if req.title.trim().is_empty() || req.title.chars().count() > 200 || req.title.chars().any(char::is_control) {
        return invalid("title must be 1-200 characters without control characters");
    }
    if req.max_file_bytes == 0 {
        return invalid("max_file_bytes must be positive");
    }
    if req.allowed_types.is_empty()
        || req.allowed_types.len() > 50
        || !req.allowed_types.iter().all(|p| is_valid_type_pattern(p))
    {
        return invalid("allowed_types must list 1-50 patterns like image/*, video/mp4 or */*");
    }
    Ok(())
}

/// Creates an event and its guest code and host token.
pub async fn create_event_row(
    records: &Records,
    config: &Config,
    now: UnixMillis,
    req: &CreateEventRequest,
) -> Result<(EventRow, CreateEventResponse)> {
    validate_event(req)?;
    let guest_code = new_guest_code();
    let host_token = new_token();
    let wall_token = new_token();
    let row = records
        .create_event(EventRow {
            id: 0,
            slug: req.slug.clone(),
            title: req.title.trim().to_owned(),
            max_file_bytes: req.max_file_bytes,
            allowed_types: req.allowed_types.iter().map(|p| p.trim().to_ascii_lowercase()).collect(),
            moderation: req.moderation,
            dedup: req.dedup,
            guest_code: guest_code.clone(),
            host_token_hash: token_hash(&host_token),
            wall_token_hash: token_hash(&wall_token),
            created_at: now,
        })
        .await?;
    let response = CreateEventResponse { event: event_info(config, &row), guest_code, host_token, wall_token };
    Ok((row, response))
}

/// `POST /v1/events`
#[utoipa::path(post, path = "/v1/events", tag = "events",
    request_body = CreateEventRequest,
    security(("admin" = [])),
    responses(
        (status = 201, body = CreateEventResponse, description = "Created"),
        CredentialRefused,
        (status = 409, body = Problem, content_type = "application/problem+json", description = "slug_taken"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "invalid_event"),
    ))]
pub async fn create_event(
    State(records): State<Records>,
    State(config): State<Arc<Config>>,
    State(lifetimes): State<Lifetimes>,
    _admin: Admin,
    ApiJson(req): ApiJson<CreateEventRequest>,
) -> Result<(StatusCode, Json<CreateEventResponse>)> {
    let (_, response) = create_event_row(&records, &config, lifetimes.now(), &req).await?;
    Ok((StatusCode::CREATED, Json(response)))
}

/// `POST /v1/events/{slug}/sessions`
#[utoipa::path(post, path = "/v1/events/{slug}/sessions", tag = "guests",
    params(("slug" = String, Path, description = "Event slug")),
    request_body = CreateSessionRequest,
    responses(
        (status = 201, body = SessionResponse),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "wrong_guest_code; too_many_sessions: the event opened as many sessions in the last hour as the server allows, or this address its share of them (a session that authorized nothing counts for 10 minutes)"),
        NotFound,
        (status = 429, body = Problem, content_type = "application/problem+json", description = "rate_limited (Retry-After)"),
    ))]
pub async fn create_session(
    State(records): State<Records>,
    State(config): State<Arc<Config>>,
    State(lifetimes): State<Lifetimes>,
    State(limits): State<Arc<Limits>>,
    client: Option<axum::Extension<crate::limits::ClientAddress>>,
    ApiPath(slug): ApiPath<String>,
    ApiJson(req): ApiJson<CreateSessionRequest>,
) -> Result<(StatusCode, Json<SessionResponse>)> {
    let event = event(&records, &slug).await?;
    if !constant_time_eq(&req.guest_code.trim().to_ascii_lowercase(), &event.guest_code) {
        return Err(Error::problem(ErrorCode::WrongGuestCode, "this guest code does not open this event"));
    }
    let token = new_token();
    let now = lifetimes.now();
    let expires_at = now + config.effective_session_ttl().as_millis() as i64;
    let limits = &limits.config;
    records
        .create_session(crate::store::NewSession {
            event_id: event.id,
            token_hash: token_hash(&token),
            now,
            expires_at,
            client_key: client.map(|c| crate::limits::rate_key(c.0.0).to_string()),
            max_per_hour: limits.max_sessions_per_event_per_hour,
            max_per_client_per_hour: limits
                .max_sessions_per_client_per_event_per_hour
                .min(limits.max_sessions_per_event_per_hour),
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(SessionResponse {
            session_token: token,
            expires_at: format_rfc3339(expires_at),
            event: event_info(&config, &event),
        }),
    ))
}

/// `POST /v1/media/{id}/moderation`
#[utoipa::path(post, path = "/v1/media/{id}/moderation", tag = "hosts",
    params(("id" = Uuid, Path, description = "Media id")),
    request_body = ModerationRequest,
    security(("host" = [])),
    responses(
        (status = 200, body = upload_once_core::wire::HostMedia),
        CredentialRefused, NotFound,
        (status = 410, body = Problem, content_type = "application/problem+json", description = "removed: rejected past the retention, its objects deleted; no decision brings it back"),
    ))]
pub async fn moderate(
    State(Stores { records, links, lifetimes, .. }): State<Stores>,
    State(services): State<Arc<MediaServices>>,
    HostOfMedia { media, event }: HostOfMedia,
    ApiJson(req): ApiJson<ModerationRequest>,
) -> Result<Json<upload_once_core::wire::HostMedia>> {
    let id = media.id;
    crate::services::views::removed(&media)?;
    let reason = req.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
    if reason.is_some_and(|r| r.chars().count() > MAX_REASON_CHARS) {
        return Err(Error::problem(ErrorCode::MalformedRequest, "reason must be at most 500 characters"));
    }
    let row = records
        .moderate(HostDecision {
            event_id: event.id,
            media_id: id,
            decision: req.decision,
            reason,
            now: lifetimes.now(),
        })
        .await?
        .ok_or_else(|| Error::not_found("media"))?;
    crate::services::views::moderated(&services, &row);
    let shown = crate::services::views::host_media(&links, &services, &event, std::slice::from_ref(&row)).await?;
    Ok(Json(shown.into_iter().next().expect("one row, one item")))
}

/// Query of the wall.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct WallQuery {
    /// The `next_cursor` of the previous page; absent for the start.
    pub after: Option<String>,
    /// Instead of `after`: start with the newest `last` items (1 to 100),
    /// so a screen that shows only so many never reads the event from its
    /// start.
    pub last: Option<u32>,
    /// The guest code (or send a wall or host token as bearer, or the code
    /// in `X-Guest-Code`).
    pub code: Option<String>,
}

/// The opaque wall cursor of a wall position.
pub(crate) fn encode_cursor(seq: i64) -> String {
    format!("w{seq:x}")
}

/// The wall position of a cursor this server issued.
pub(crate) fn decode_cursor(cursor: &str) -> Result<i64> {
    cursor
        .strip_prefix('w')
        .and_then(|hex| i64::from_str_radix(hex, 16).ok())
        .filter(|seq| *seq >= 0)
        .ok_or_else(|| Error::problem(ErrorCode::InvalidQuery, "`after` is not a cursor this server issued"))
}

/// Whether the request may read the event's wall (§3.11's credentials).
pub(crate) fn may_see_wall(headers: &HeaderMap, query: &WallQuery, event: &EventRow) -> Result<()> {
    if let Some(token) = bearer(headers) {
        let hash = token_hash(token);
        if constant_time_eq(&hash, &event.wall_token_hash) || constant_time_eq(&hash, &event.host_token_hash) {
            return Ok(());
        }
    }
    let code = headers.get("x-guest-code").and_then(|v| v.to_str().ok()).or(query.code.as_deref());
    match code {
        Some(code) if constant_time_eq(&code.trim().to_ascii_lowercase(), &event.guest_code) => Ok(()),
        Some(_) => Err(Error::problem(ErrorCode::WrongGuestCode, "this guest code does not open this event")),
        None if bearer(headers).is_some() => {
            Err(Error::problem(ErrorCode::Forbidden, "this token does not open the wall"))
        }
        None => Err(Error::problem(ErrorCode::Unauthorized, "send the guest code, or a wall token as bearer")),
    }
}

/// The wall position a read starts after: `after`'s, or the one before the
/// newest `last` items, or the start.
pub(crate) async fn wall_start(records: &Records, event: &EventRow, query: &WallQuery) -> Result<i64> {
    match (query.after.as_deref(), query.last) {
        (Some(_), Some(_)) => {
            Err(Error::problem(ErrorCode::InvalidQuery, "send `after` (a cursor) or `last` (a count), not both"))
        }
        (Some(cursor), None) => decode_cursor(cursor.trim()),
        (None, Some(n)) if !(1..=WALL_PAGE).contains(&n) => {
            Err(Error::problem(ErrorCode::InvalidQuery, "`last` must be from 1 to 100"))
        }
        (None, Some(n)) => Ok(records.wall_before_last(event.id, n).await?),
        (None, None) => Ok(0),
    }
}

/// `GET /v1/events/{slug}/wall`
#[utoipa::path(get, path = "/v1/events/{slug}/wall", tag = "wall",
    params(("slug" = String, Path, description = "Event slug"), WallQuery),
    security((), ("wall" = []), ("host" = [])),
    responses(
        (status = 200, body = WallResponse),
        WallRefused,
    ))]
pub async fn wall(
    State(records): State<Records>,
    State(links): State<Links>,
    State(media): State<Arc<MediaServices>>,
    headers: HeaderMap,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(query): ApiQuery<WallQuery>,
) -> Result<Json<WallResponse>> {
    let event = event(&records, &slug).await?;
    may_see_wall(&headers, &query, &event)?;
    let after = wall_start(&records, &event, &query).await?;
    let rows = records.wall(event.id, after, WALL_PAGE).await?;
    let next = rows.last().and_then(|m| m.wall_seq).unwrap_or(after);
    Ok(Json(WallResponse {
        items: crate::services::views::wall_items(&links, &media, &rows).await?,
        next_cursor: encode_cursor(next),
    }))
}

/// `POST /v1/events/{slug}/rotate` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct RotateRequest {
    /// `guest_code`, `wall_token` or `host_token`.
    pub what: Credential,
}

/// `POST /v1/events/{slug}/rotate` answer: the one new credential.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RotateResponse {
    /// The new guest code (for `guest_code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_code: Option<String>,
    /// The new wall token (for `wall_token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_token: Option<String>,
    /// The new host token (for `host_token`): the old one no longer works,
    /// this one is the host's from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_token: Option<String>,
}

/// `POST /v1/events/{slug}/rotate`: replaces one credential of the event.
/// The old value stops working with the next request, and a wall streaming
/// with it gets a last `revoked` event and the end of its stream. Guests who joined with
/// the old code keep their sessions and their uploads; new guests need the
/// new code.
#[utoipa::path(post, path = "/v1/events/{slug}/rotate", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug")),
    request_body = RotateRequest,
    security(("host" = [])),
    responses(
        (status = 200, body = RotateResponse, description = "The new credential (only the one rotated)"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "malformed_request: `what` is not guest_code, wall_token or host_token"),
        CredentialRefused, NotFound,
    ))]
pub async fn rotate(
    State(records): State<Records>,
    State(media): State<Arc<MediaServices>>,
    HostOfEvent(event): HostOfEvent,
    ApiJson(req): ApiJson<RotateRequest>,
) -> Result<Json<RotateResponse>> {
    let mut response = RotateResponse::default();
    let stored = match req.what {
        Credential::GuestCode => response.guest_code.insert(new_guest_code()).clone(),
        Credential::WallToken => token_hash(response.wall_token.insert(new_token())),
        Credential::HostToken => token_hash(response.host_token.insert(new_token())),
    };
    records.rotate_credential(event.id, req.what, &stored).await?;
    media.live.credentials_changed(event.id);
    Ok(Json(response))
}

/// `DELETE /v1/events/{slug}`: deletes the event, all its rows and all its
/// objects (originals, renditions, unfinished multipart uploads). Its
/// credentials stop working at once: the event is not found, its guest
/// sessions are unknown.
#[utoipa::path(delete, path = "/v1/events/{slug}", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug")),
    security(("host" = [])),
    responses(
        (status = 204, description = "Deleted, rows and objects"),
        (status = 202, description = "Deleted for everyone; some objects could not be deleted now and the sweeper finishes them"),
        CredentialRefused, NotFound,
    ))]
pub async fn delete_event(State(state): State<AppState>, HostOfEvent(event): HostOfEvent) -> Result<StatusCode> {
    // The whole state: the sweeper's purge is a service that may use any of it.
    if !state.records.mark_event_deleted(event.id, state.now()).await? {
        return Err(Error::not_found("event"));
    }
    state.media.live.credentials_changed(event.id);
    match crate::services::sweeper::purge_event(&state, event.id).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(e) => {
            tracing::warn!(event_id = event.id, "delete event: left to the sweeper: {e}");
            Ok(StatusCode::ACCEPTED)
        }
    }
}

/// `POST /v1/events/{slug}/guests/{guest}/revoke` body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeGuestRequest {
    /// Also shut the address the session was opened from out of the event
    /// (no session is opened from it any more). Careful at a venue: its
    /// guests may share one address behind its NAT.
    #[serde(default)]
    pub block_address: bool,
}

/// `POST /v1/events/{slug}/guests/{guest}/revoke` answer.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RevokeGuestResponse {
    /// Uploads of the guest not yet saved that were ended.
    pub ended_uploads: u64,
    /// Whether its address is shut out of the event.
    pub address_blocked: bool,
}

/// `POST /v1/events/{slug}/guests/{guest}/revoke`: the host removes a guest
/// (the `guest` of an item in the host's list). Its session opens nothing
/// more (`403 session_revoked`), its uploads not yet saved end (their URLs
/// take no more bytes, multipart uploads are aborted), and with
/// `block_address` no session is opened from its address again. What it
/// already shared stays, for the host to reject.
#[utoipa::path(post, path = "/v1/events/{slug}/guests/{guest}/revoke", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug"), ("guest" = String, Path, description = "The `guest` of an item in the host's list")),
    request_body = RevokeGuestRequest,
    security(("host" = [])),
    responses(
        (status = 200, body = RevokeGuestResponse),
        CredentialRefused,
        (status = 404, body = Problem, content_type = "application/problem+json", description = "no such event, or no such guest of it"),
    ))]
pub async fn revoke_guest(
    State(Stores { records, objects, lifetimes, .. }): State<Stores>,
    headers: HeaderMap,
    ApiPath((slug, guest)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<RevokeGuestRequest>,
) -> Result<Json<RevokeGuestResponse>> {
    let event = event(&records, &slug).await?;
    super::extract::require_host(&headers, &event)?;
    let guest: i64 = guest.parse().map_err(|_| Error::not_found("guest"))?;
    let ended = records
        .revoke_session(GuestRemoval {
            event_id: event.id,
            session_id: guest,
            block_address: req.block_address,
            now: lifetimes.now(),
        })
        .await?
        .ok_or_else(|| Error::not_found("guest"))?;
    for a in &ended {
        crate::services::uploads::abort_upload(&objects, a, "a removed guest").await;
    }
    Ok(Json(RevokeGuestResponse { ended_uploads: ended.len() as u64, address_blocked: req.block_address }))
}
