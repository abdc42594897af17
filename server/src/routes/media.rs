//! Media read-back (renditions for everyone, originals for the host, with
//! Range), the wall's live feed, the host's ZIP download and the host's
//! invitation data (issue 17). The machinery is in [`crate::media`].

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use upload_once_core::ErrorCode;
use upload_once_core::time::{UnixMillis, format_rfc3339};
use upload_once_core::wire::{EventInfo, Moderation, Problem};
use uuid::Uuid;

use super::events::{WallQuery, decode_cursor, encode_cursor, event_info, may_see_wall};
use super::extract::{ApiJson, ApiPath, ApiQuery, HostOfEvent, event};
use super::problems::{CredentialRefused, LinkRefused, NotFound, RenditionWithheld, WallRefused};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::media::MediaServices;
use crate::media::jobs::{JobRow, JobState};
use crate::media::live::Change;
use crate::media::range::{self, RangeAnswer};
use crate::media::renditions::{self, PLACEHOLDER_TYPE, RENDITION_TYPE};
use crate::media::{Size, zip};
use crate::ops::Ops;
use crate::services::views::removed;
use crate::state::{AppState, Lifetimes, Links, Objects, Records, Stores};
use crate::storage::GetAnswer;
use crate::store::{EventRow, MediaRow};

/// Content types a browser may render inline from this origin. Anything
/// else (HTML, SVG, scripts, unknown) is sent as a download.
pub const INLINE_TYPES: &[&str] = &[
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "image/avif",
    "image/heic",
    "image/heif",
    "image/bmp",
    "video/mp4",
    "video/webm",
    "video/quicktime",
    "video/ogg",
];

const CACHE: &str = "private, max-age=86400";
/// How long an S3 URL a media URL redirects to works.
const REDIRECT_TTL_MS: i64 = 60 * 60 * 1000;
/// How long a ZIP download link works.
const ARCHIVE_LINK_TTL_MS: i64 = 15 * 60 * 1000;

/// Query of a media read: as the server wrote it into the link.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct MediaContentQuery {
    /// The signature from the media URL.
    pub sig: String,
    /// When the link stops working, Unix seconds.
    pub exp: Option<i64>,
    /// The id of the key that signed the link.
    pub kid: Option<String>,
    /// The host's signature (`HostMedia.url` of a rejected media): shows
    /// what the host took down, to the host alone.
    pub host: Option<String>,
}

impl MediaContentQuery {
    fn link(&self) -> crate::media::Link<'_> {
        crate::media::Link { sig: &self.sig, exp: self.exp, kid: self.kid.as_deref() }
    }
}

/// A link that does not open its media: `404 not_found` when this server
/// did not sign it (or no longer has the key that did), `403 url_expired`
/// past its expiry.
fn link_refused(e: crate::media::LinkError) -> Error {
    match e {
        crate::media::LinkError::Invalid => Error::not_found("media"),
        crate::media::LinkError::Expired => Error::problem(
            ErrorCode::UrlExpired,
            "this media link has expired; the status, the wall and the host's list hand out fresh ones",
        ),
    }
}

/// `410 removed` for a rejected media's public links: the host took it
/// down. Its host's links (signed for the original) still show it, so the
/// decision can be reversed.
async fn taken_down(
    records: &Records,
    links: &Links,
    now: UnixMillis,
    media: &MediaRow,
    query: &MediaContentQuery,
) -> Result<()> {
    removed(media)?;
    if media.moderation != Moderation::Rejected {
        return Ok(());
    }
    let binding = match query.host {
        Some(_) => records.event_by_id(media.event_id).await?.map(|e| crate::media::host_binding(&e)),
        None => None,
    };
    let for_host = query.host.as_deref().zip(binding).is_some_and(|(sig, binding)| {
        let link = crate::media::Link { sig, ..query.link() };
        crate::media::check_host_preview(&links.signer, media.id, &binding, link, now).is_ok()
    });
    if media.moderation == Moderation::Rejected && !for_host {
        return Err(Error::problem(ErrorCode::Removed, "the host took this down"));
    }
    Ok(())
}

/// The headers every media answer carries, so that nothing uploaded can run
/// script on this origin.
fn safe_headers(h: &mut HeaderMap) {
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; sandbox"));
    h.insert("cross-origin-resource-policy", HeaderValue::from_static("cross-origin"));
}

/// Counts one media answer for `GET /metrics`.
fn counted(media: &MediaServices, kind: crate::media::Answer, response: Response) -> Response {
    media.count(kind);
    response
}

/// Until when the store's URL a media link redirects to may work: an hour
/// at most, and never past the link's own expiry (a link that stopped
/// working must not live on as the URL it redirected to).
fn redirect_until(now: UnixMillis, query: &MediaContentQuery) -> UnixMillis {
    let cap = now + REDIRECT_TTL_MS;
    query.exp.map_or(now, |exp| exp.saturating_mul(1000)).min(cap)
}

/// Serves one stored object as `content_type` (`attachment` when not
/// inline): a redirect to the store's own URL, working until `until`, when
/// it has one (S3), else the bytes, or the one range asked for.
async fn serve_object(
    (objects, media): (&Objects, &MediaServices),
    key: &str,
    (content_type, inline): (&str, bool),
    until: UnixMillis,
    request: &HeaderMap,
) -> Result<Response> {
    use crate::media::Answer;
    let disposition = (!inline).then_some("attachment");
    let answer = GetAnswer { content_type, disposition, cache_control: CACHE };
    if let Some(url) = objects.presign_get(key, until, &answer) {
        let mut response = StatusCode::TEMPORARY_REDIRECT.into_response();
        let h = response.headers_mut();
        if let Ok(location) = HeaderValue::from_str(&url) {
            h.insert(header::LOCATION, location);
        }
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        safe_headers(h);
        return Ok(counted(media, Answer::Redirect, response));
    }
    let Some(meta) = objects.head(key).await? else { return Err(Error::not_found("media")) };
    let text = |name: header::HeaderName| request.get(name).and_then(|v| v.to_str().ok());
    let wanted = range::answer(text(header::RANGE), text(header::IF_RANGE), meta.size, &meta.etag);
    let (status, first, last, kind) = match wanted {
        RangeAnswer::Full => (StatusCode::OK, 0, meta.size.saturating_sub(1), Answer::Full),
        RangeAnswer::Partial { first, last } => (StatusCode::PARTIAL_CONTENT, first, last, Answer::Partial),
        RangeAnswer::Unsatisfiable => {
            let mut response = StatusCode::RANGE_NOT_SATISFIABLE.into_response();
            let h = response.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{}", meta.size)) {
                h.insert(header::CONTENT_RANGE, v);
            }
            h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            safe_headers(h);
            return Ok(counted(media, Answer::Unsatisfiable, response));
        }
    };
    let body = if meta.size == 0 {
        None
    } else if status == StatusCode::OK {
        objects.get(key).await?.map(|(_, body)| body)
    } else {
        objects.get_range(key, first, last).await?.map(|(_, body)| body)
    };
    let (body, length) = match body {
        Some(body) => (Body::from_stream(body), last - first + 1),
        None if meta.size == 0 => (Body::empty(), 0),
        None => return Err(Error::not_found("media")),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(content_type).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if status == StatusCode::PARTIAL_CONTENT {
        if let Ok(v) = HeaderValue::from_str(&format!("bytes {first}-{last}/{}", meta.size)) {
            h.insert(header::CONTENT_RANGE, v);
        }
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE));
    safe_headers(h);
    if let Ok(etag) = HeaderValue::from_str(&meta.etag) {
        h.insert(header::ETAG, etag);
    }
    if let Some(disposition) = disposition {
        h.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static(disposition));
    }
    Ok(counted(media, kind, response))
}

/// The type an original is served as, and whether inline.
fn served_type(content_type: &str) -> (&str, bool) {
    if INLINE_TYPES.contains(&content_type) { (content_type, true) } else { ("application/octet-stream", false) }
}

/// `GET /v1/media/{id}/content`: the original bytes, as uploaded (with
/// their metadata), for the host. Range requests are answered.
#[utoipa::path(get, path = "/v1/media/{id}/content", tag = "hosts",
    params(("id" = Uuid, Path, description = "Media id"), MediaContentQuery),
    responses(
        (status = 200, description = "The original bytes: allow-listed image/video types inline, anything else as an attachment; always nosniff and a sandboxing CSP; Accept-Ranges: bytes"),
        (status = 206, description = "The one byte range asked for (Content-Range)"),
        (status = 307, description = "S3 storage: the bucket's presigned URL, which answers ranges itself"),
        LinkRefused,
        (status = 410, body = Problem, content_type = "application/problem+json", description = "removed: rejected past the retention, its objects deleted"),
        (status = 416, description = "The range starts past the end (Content-Range: bytes */size); no body"),
    ))]
pub async fn original(
    State(Stores { records, objects, lifetimes, links }): State<Stores>,
    State(services): State<Arc<MediaServices>>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<MediaContentQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    let media = records.media(id).await?.ok_or_else(|| Error::not_found("media"))?;
    let event = records.event_by_id(media.event_id).await?.ok_or_else(|| Error::not_found("media"))?;
    let binding = crate::media::host_binding(&event);
    let now = lifetimes.now();
    crate::media::check_original(&links.signer, id, &binding, query.link(), now).map_err(link_refused)?;
    removed(&media)?;
    let served = served_type(&media.content_type);
    serve_object((&objects, &services), &media.object_key, served, redirect_until(now, &query), &headers).await
}

/// Waits (at most the configured wait) for a media record's rendition job
/// to end, making the job if the scan has not yet; `None` if it is still
/// running.
async fn finished_job(
    ops: &Arc<Ops>,
    media: &MediaServices,
    lifetimes: &Lifetimes,
    id: Uuid,
) -> Result<Option<JobRow>> {
    // While it waits, the request holds no slot of the API's: waiting for a
    // job is not work the server does for it.
    let waiter = ops.wait_for_job();
    let wait = if waiter.is_some() { media.settings.wait } else { Duration::ZERO };
    let deadline = tokio::time::Instant::now() + wait;
    let mut finished = media.events.watch_finished();
    loop {
        match media.db.job(id).await? {
            Some(job) if matches!(job.state, JobState::Done | JobState::Placeholder) => return Ok(Some(job)),
            Some(_) => {}
            None => {
                media.db.enqueue(id, lifetimes.now()).await?;
                media.events.wake();
            }
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        // This instance's workers say when a job ends; another instance's
        // are read from the database.
        let _ = tokio::time::timeout((deadline - now).min(Duration::from_millis(250)), finished.changed()).await;
    }
}

/// The placeholder image, with the reason in `X-Placeholder-Reason`.
fn placeholder(media: &MediaServices, reason: &str) -> Response {
    let mut response = Response::new(Body::from(renditions::placeholder()));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(PLACEHOLDER_TYPE));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE));
    let printable: String = reason.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect();
    if let Ok(v) = HeaderValue::from_str(&printable) {
        h.insert("x-placeholder-reason", v);
    }
    safe_headers(h);
    counted(media, crate::media::Answer::Placeholder, response)
}

/// What a rendition's answer uses (a sub-state of [`AppState`]).
pub struct RenditionServing {
    stores: Stores,
    ops: Arc<Ops>,
    media: Arc<MediaServices>,
}

impl FromRef<AppState> for RenditionServing {
    fn from_ref(state: &AppState) -> RenditionServing {
        RenditionServing { stores: Stores::from_ref(state), ops: state.ops.clone(), media: state.media.clone() }
    }
}

async fn rendition(
    serving: RenditionServing,
    id: Uuid,
    query: &MediaContentQuery,
    size: Size,
    headers: &HeaderMap,
) -> Result<Response> {
    let RenditionServing { stores: Stores { records, objects, links, lifetimes }, ops, media: services } = serving;
    let stored = (&objects, services.as_ref());
    let media = records.media(id).await?.ok_or_else(|| Error::not_found("media"))?;
    crate::media::check_rendition(&links.signer, media.event_id, id, query.link(), lifetimes.now())
        .map_err(link_refused)?;
    taken_down(&records, &links, lifetimes.now(), &media, query).await?;
    let Some(job) = finished_job(&ops, &services, &lifetimes, id).await? else {
        return Err(Error::problem(
            ErrorCode::ObjectStoreUnavailable,
            "the rendition is still being made; ask again in a moment",
        ));
    };
    match job.state {
        // A video's display URL plays its shareable MP4 (ranges and all),
        // never the original; its thumbnail is its poster's.
        JobState::Done if size == Size::Display && media.content_type.starts_with("video/") => {
            let key = crate::media::video_key(&media.object_key);
            let until = redirect_until(lifetimes.now(), query);
            serve_object(stored, &key, (crate::media::video::VIDEO_TYPE, true), until, headers).await
        }
        // A video over the length limit has a poster all the same (its
        // size recorded), and only that: its display is the placeholder.
        JobState::Done | JobState::Placeholder
            if job.state == JobState::Done || (size == Size::Thumb && job.width.is_some()) =>
        {
            let key = size.key(&media.object_key);
            serve_object(stored, &key, (RENDITION_TYPE, true), redirect_until(lifetimes.now(), query), headers).await
        }
        _ => Ok(placeholder(&services, job.reason.as_deref().unwrap_or("no rendition"))),
    }
}

/// `GET /v1/media/{id}/display`: the display rendition, what the wall, the
/// guests and the host's list show.
#[utoipa::path(get, path = "/v1/media/{id}/display", tag = "wall",
    params(("id" = Uuid, Path, description = "Media id"), MediaContentQuery),
    responses(
        (status = 200, description = "A photo: JPEG, at most 1,600 px on its long edge, upright, with no metadata. A video: its shareable MP4 (H.264, AAC, faststart, at most 1080p, no metadata; Range answered). Anything else, or a video that could not be made shareable: a placeholder PNG, the reason in X-Placeholder-Reason"),
        (status = 206, description = "A video: the one byte range asked for"),
        (status = 307, description = "S3 storage: the bucket's presigned URL"),
        LinkRefused,
        RenditionWithheld,
        (status = 416, description = "The range starts past the end; no body"),
    ))]
pub async fn display(
    State(serving): State<RenditionServing>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<MediaContentQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    rendition(serving, id, &query, Size::Display, &headers).await
}

/// `GET /v1/media/{id}/thumb`: the thumbnail (same signature as the
/// display rendition's URL).
#[utoipa::path(get, path = "/v1/media/{id}/thumb", tag = "wall",
    params(("id" = Uuid, Path, description = "Media id"), MediaContentQuery),
    responses(
        (status = 200, description = "A photo: JPEG, at most 400 px on its long edge, upright, with no metadata. A video: its poster, the same way. Anything else: a placeholder PNG, the reason in X-Placeholder-Reason"),
        (status = 307, description = "S3 storage: the bucket's presigned URL"),
        LinkRefused,
        RenditionWithheld,
    ))]
pub async fn thumb(
    State(serving): State<RenditionServing>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<MediaContentQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    rendition(serving, id, &query, Size::Thumb, &headers).await
}

/// One step of a live wall's stream.
struct Listener {
    state: AppState,
    event_id: i64,
    /// The last wall position this wall has.
    cursor: i64,
    changes: broadcast::Receiver<Arc<Change>>,
    pending: VecDeque<Event>,
    /// What the wall has not seen must be read from the database first.
    catch_up: bool,
    /// The credential the wall opened the stream with (checked again when
    /// the event's change).
    headers: HeaderMap,
    query: WallQuery,
    /// The credential no longer opens the wall: the stream ends once
    /// `pending` is sent.
    ending: bool,
    /// The credential is to be checked again before anything else.
    check_credentials: bool,
    /// Its place under the live walls' caps, given back when the stream
    /// ends.
    _slot: crate::limits::LiveSlot,
}

impl Listener {
    fn items_event(&self, items: &[&str]) -> Event {
        let data = format!("{{\"items\":[{}],\"next_cursor\":\"{}\"}}", items.join(","), encode_cursor(self.cursor));
        Event::default().event("items").id(encode_cursor(self.cursor)).data(data)
    }

    /// Reads every approval after the cursor, page by page.
    async fn read_gap(&mut self) -> Result<()> {
        loop {
            let rows = self.state.records.wall(self.event_id, self.cursor, 100).await?;
            let Some(last) = rows.last().and_then(|m| m.wall_seq) else { return Ok(()) };
            let rendered = crate::services::live::render(&self.state, &rows).await?;
            self.cursor = last;
            let items: Vec<&str> = rendered.iter().map(|(_, json)| json.as_str()).collect();
            let event = self.items_event(&items);
            self.pending.push_back(event);
            if rows.len() < 100 {
                return Ok(());
            }
        }
    }

    /// Whether the wall's credential still opens it, after the event's
    /// credentials changed: `Ok(None)` if it does, the answer a new request
    /// with it would get if not.
    async fn refused(&self) -> Result<Option<Problem>> {
        let refusal = match self.state.records.event_by_id(self.event_id).await? {
            None => Error::not_found("event"),
            Some(event) => match may_see_wall(&self.headers, &self.query, &event) {
                Ok(()) => return Ok(None),
                Err(e) => e,
            },
        };
        Ok(Some(refusal.to_problem()))
    }

    /// Checks the stream's credential again: if it no longer opens the
    /// wall, queues a last `revoked` event (the problem a new request would
    /// get) and ends the stream after it; the EventSource's reconnection is
    /// refused the same way. `Err` when it could not be checked (the stream
    /// ends, and the reconnection checks it).
    async fn credential_refused(&mut self) -> std::result::Result<(), ()> {
        match self.refused().await {
            Ok(None) => Ok(()),
            Ok(Some(problem)) => {
                let data = serde_json::to_string(&problem).unwrap_or_default();
                self.pending.push_back(Event::default().event("revoked").data(data));
                self.ending = true;
                Ok(())
            }
            Err(e) => {
                tracing::debug!(event_id = self.event_id, "live wall: could not check a credential: {e}");
                Err(())
            }
        }
    }

    /// The next event for the wall; `None` ends the stream (the wall's
    /// EventSource comes back with its Last-Event-ID).
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            if self.ending {
                return None;
            }
            if self.check_credentials {
                // The stream's credential was checked before it subscribed:
                // a change in between reached no feed it listens to.
                self.check_credentials = false;
                if self.credential_refused().await.is_err() {
                    return None;
                }
                continue;
            }
            if self.catch_up {
                if let Err(e) = self.read_gap().await {
                    tracing::debug!(event_id = self.event_id, "live wall: a listener could not read the wall: {e}");
                    return None;
                }
                self.catch_up = false;
                continue;
            }
            match self.changes.recv().await {
                Ok(change) => match change.as_ref() {
                    Change::Approved { from, .. } if *from > self.cursor => self.catch_up = true,
                    Change::Approved { to, items, .. } => {
                        let fresh: Vec<&str> =
                            items.iter().filter(|(seq, _)| *seq > self.cursor).map(|(_, json)| json.as_str()).collect();
                        self.cursor = self.cursor.max(*to);
                        if !fresh.is_empty() {
                            let event = self.items_event(&fresh);
                            self.pending.push_back(event);
                        }
                    }
                    Change::Removed(id) => {
                        self.pending.push_back(Event::default().event("removed").data(format!("{{\"id\":\"{id}\"}}")))
                    }
                    Change::Credentials => {
                        if self.credential_refused().await.is_err() {
                            return None;
                        }
                    }
                },
                Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up = true,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// `GET /v1/events/{slug}/wall/live`: the wall as Server-Sent Events.
#[utoipa::path(get, path = "/v1/events/{slug}/wall/live", tag = "wall",
    params(("slug" = String, Path, description = "Event slug"), WallQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received (a cursor); it wins over `after`")),
    security((), ("wall" = []), ("host" = [])),
    responses(
        (status = 200, content_type = "text/event-stream", description = "`items` events (data: a WallResponse page; id: its cursor) for everything approved after the cursor, then as it is approved; `removed` events (data: {\"id\"}) when the host takes media off; a `revoked` event (data: a Problem) and the end of the stream when a rotation or the event's deletion means the credential no longer opens the wall; a comment every 15 s"),
        WallRefused, NotFound,
        (status = 429, body = Problem, content_type = "application/problem+json", description = "`rate_limited`: this address (`--max-live-per-client`) or this event (`--max-live-per-event`) has as many live walls open as it may, or this address reads the wall too often (`--rate-wall`)"),
    ))]
pub async fn wall_live(
    State(state): State<AppState>,
    client: Option<axum::Extension<crate::limits::ClientAddress>>,
    headers: HeaderMap,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(query): ApiQuery<WallQuery>,
) -> Result<Response> {
    let event = event(&state.records, &slug).await?;
    may_see_wall(&headers, &query, &event)?;
    let client = client.map(|c| c.0.0);
    let slot = crate::limits::LiveSlots::take(&state.limits, client, event.id)
        .map_err(|refusal| Error::problem(ErrorCode::RateLimited, refusal))?;
    let last_id = headers.get("last-event-id").and_then(|v| v.to_str().ok()).filter(|v| !v.trim().is_empty());
    // A reconnection goes on from the last event it had, whatever the link
    // asked for at first.
    let cursor = match last_id {
        Some(cursor) => decode_cursor(cursor.trim())?,
        None => super::events::wall_start(&state.records, &event, &query).await?,
    };
    // Subscribed before anything is read: nothing approved from now on is
    // missed.
    let changes = crate::services::live::subscribe(&state, event.id).await;
    let listener = Listener {
        state,
        event_id: event.id,
        cursor,
        changes,
        pending: VecDeque::new(),
        catch_up: true,
        headers,
        query,
        ending: false,
        check_credentials: true,
        _slot: slot,
    };
    let stream = futures_util::stream::unfold(listener, |mut l| async move {
        l.next().await.map(|event| (Ok::<_, Infallible>(event), l))
    });
    let mut response = Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response();
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Proxies that buffer (nginx) pass each event on at once.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// `GET /v1/events/{slug}/invite` answer.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InviteResponse {
    /// The event.
    pub event: EventInfo,
    /// The guest code (shared in guest links and on the wall).
    pub guest_code: String,
}

/// `GET /v1/events/{slug}/invite`: what the host needs to invite guests.
#[utoipa::path(get, path = "/v1/events/{slug}/invite", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug")),
    security(("host" = [])),
    responses(
        (status = 200, body = InviteResponse),
        CredentialRefused, NotFound,
    ))]
pub async fn invite(
    State(config): State<Arc<Config>>,
    HostOfEvent(event): HostOfEvent,
) -> Result<Json<InviteResponse>> {
    Ok(Json(InviteResponse { event: event_info(&config, &event), guest_code: event.guest_code.clone() }))
}

/// Which originals a ZIP holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArchiveSelection {
    /// Every approved original.
    #[default]
    Approved,
    /// Every original, whatever the host decided.
    All,
}

impl ArchiveSelection {
    fn as_str(self) -> &'static str {
        match self {
            ArchiveSelection::Approved => "approved",
            ArchiveSelection::All => "all",
        }
    }
}

/// `POST /v1/events/{slug}/archive` body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct ArchiveRequest {
    /// `approved` (the default) or `all`.
    #[serde(default)]
    pub media: ArchiveSelection,
}

/// `POST /v1/events/{slug}/archive` answer.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ArchiveLink {
    /// The download (a capability: no header needed, so a plain link works).
    pub url: String,
    /// When the link stops working (a download under way goes on).
    pub expires_at: String,
}

/// Query of a ZIP download.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct ArchiveQuery {
    /// `approved` or `all`.
    pub media: ArchiveSelection,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// The id of the key that signed it.
    pub kid: String,
    /// HMAC signature.
    pub sig: String,
}

/// What a ZIP link signs: the event by id (a slug used again by a later
/// event opens nothing of the earlier one) and its host token
/// ([`crate::media::host_binding`]: a rotation ends the links made before).
fn archive_message(event: &EventRow, media: ArchiveSelection, exp: i64) -> String {
    format!("ARCHIVE\n{}\n{}\n{}\n{}\n{exp}", event.id, crate::media::host_binding(event), event.slug, media.as_str())
}

/// `POST /v1/events/{slug}/archive`: a link to download the originals as
/// one ZIP.
#[utoipa::path(post, path = "/v1/events/{slug}/archive", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug")),
    request_body = ArchiveRequest,
    security(("host" = [])),
    responses(
        (status = 200, body = ArchiveLink),
        CredentialRefused, NotFound,
    ))]
pub async fn archive_link(
    State(links): State<Links>,
    State(lifetimes): State<Lifetimes>,
    HostOfEvent(event): HostOfEvent,
    ApiJson(request): ApiJson<ArchiveRequest>,
) -> Result<Json<ArchiveLink>> {
    let exp = (lifetimes.now() + ARCHIVE_LINK_TTL_MS).div_euclid(1000);
    let sig = links.signer.sign(&archive_message(&event, request.media, exp));
    Ok(Json(ArchiveLink {
        url: format!(
            "{}/v1/events/{}/archive.zip?media={}&exp={exp}&kid={}&sig={sig}",
            links.public_base,
            event.slug,
            request.media.as_str(),
            links.signer.key_id()
        ),
        expires_at: format_rfc3339(exp * 1000),
    }))
}

/// `GET /v1/events/{slug}/archive.zip`: the originals, as one ZIP streamed
/// as it is read.
#[utoipa::path(get, path = "/v1/events/{slug}/archive.zip", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug"), ArchiveQuery),
    responses(
        (status = 200, content_type = "application/zip", description = "Every original (approved, or all), oldest first, each under its original filename made unique; stored, with ZIP64 where needed; Content-Length exact"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "url_expired, bad_signature"),
        NotFound,
    ))]
pub async fn archive(
    State(Stores { records, objects, lifetimes, links }): State<Stores>,
    ApiPath(slug): ApiPath<String>,
    ApiQuery(query): ApiQuery<ArchiveQuery>,
) -> Result<Response> {
    let event = event(&records, &slug).await?;
    if links.signer.verify_with(&query.kid, &archive_message(&event, query.media, query.exp), &query.sig) != Some(true)
    {
        return Err(Error::problem(ErrorCode::BadSignature, "the download link's signature does not match"));
    }
    if query.exp.saturating_mul(1000) <= lifetimes.now() {
        return Err(Error::problem(ErrorCode::UrlExpired, "the download link has expired; ask for a new one"));
    }
    let filter = match query.media {
        ArchiveSelection::Approved => Some(Moderation::Approved),
        ArchiveSelection::All => None,
    };
    let mut rows = records.list_media(event.id, filter).await?;
    // Deleted after the retention: nothing left to put in.
    rows.retain(|m| !m.removed);
    let names = zip::unique_names(rows.iter().map(|m| m.filename.as_str()));
    let entries: Vec<zip::Entry> =
        rows.iter().zip(names).map(|(m, name)| zip::Entry { name, size: m.size, modified: m.created_at }).collect();
    let options = zip::Options::default();
    let length = zip::archive_size(&entries, options);
    let keys: Vec<String> = rows.iter().map(|m| m.object_key.clone()).collect();
    let open: zip::Open = Box::new(move |n| {
        let objects = objects.clone();
        let key = keys[n].clone();
        Box::pin(async move {
            match objects.get(&key).await {
                Ok(Some((_, body))) => Ok(body),
                Ok(None) => Err(std::io::Error::other(format!("{key} is not in the object store"))),
                Err(e) => Err(std::io::Error::other(e.to_string())),
            }
        })
    });
    let mut response = Response::new(Body::from_stream(zip::archive(entries, open, options)));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/zip"));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    let filename = format!("{}-{}.zip", event.slug, query.media.as_str());
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    safe_headers(h);
    Ok(response)
}
