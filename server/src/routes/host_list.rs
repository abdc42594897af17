//! The host's list of an event's media, at a festival's size (issue 48):
//! read a page at a time, by filter, and then by what changed since the
//! last read, so that a host page that already has the list pays for what
//! changed, not for what exists.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use upload_once_core::ErrorCode;
use upload_once_core::wire::{MediaCounts, MediaListResponse, Moderation};
use uuid::Uuid;

use super::extract::{ApiQuery, HostOfEvent};
use super::problems::CredentialRefused;
use crate::error::{Error, Result};
use crate::media::MediaServices;
use crate::state::{Links, Records};
use crate::store::{EventRow, MediaFilter, MediaListing, MediaRow};

/// A page's size when the query names none.
pub const DEFAULT_LIMIT: u32 = 100;
/// The most media one answer holds.
pub const MAX_LIMIT: u32 = 500;

/// The order of a page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListOrder {
    /// Oldest first (a queue: the default).
    #[default]
    Oldest,
    /// Newest first.
    Newest,
}

/// Query of the host's media list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct MediaQuery {
    /// `pending`, `approved`, `rejected` or `all` (the default).
    pub filter: Option<MediaFilter>,
    /// The same as `filter` with one moderation state (the older name).
    pub moderation: Option<Moderation>,
    /// `oldest` (the default) or `newest` first.
    pub order: Option<ListOrder>,
    /// The `next_cursor` of the previous page (the same filter and order).
    pub cursor: Option<String>,
    /// The `changes` of an earlier answer: what changed since, in the order
    /// it changed (the filter, order and cursor do not apply).
    pub since: Option<String>,
    /// At most this many media, 1 to 500 (100 when absent).
    pub limit: Option<u32>,
}

/// `400 invalid_query` with `detail`.
fn invalid(detail: &str) -> Error {
    Error::problem(ErrorCode::InvalidQuery, detail.to_owned())
}

/// The opaque cursor of a place in the list: after this media, in this
/// event, filter and order.
fn page_cursor(event: &EventRow, filter: MediaFilter, order: ListOrder, last: &MediaRow) -> String {
    let order = if order == ListOrder::Newest { 'n' } else { 'o' };
    format!("p{:x}.{}.{order}.{:x}.{}", event.id, filter.as_str(), last.created_at, last.id.simple())
}

/// The place a page cursor names; `400 invalid_query` if it is not one this
/// server issued for this event, filter and order.
fn decode_page_cursor(cursor: &str, event: &EventRow, filter: MediaFilter, order: ListOrder) -> Result<(i64, Uuid)> {
    let malformed = || invalid("`cursor` is not a cursor this server issued");
    let rest = cursor.strip_prefix('p').ok_or_else(malformed)?;
    let parts: Vec<&str> = rest.split('.').collect();
    let [event_id, filter_text, order_text, at, id] = parts[..] else { return Err(malformed()) };
    let event_id = i64::from_str_radix(event_id, 16).map_err(|_| malformed())?;
    let at = i64::from_str_radix(at, 16).map_err(|_| malformed())?;
    let id = Uuid::try_parse(id).map_err(|_| malformed())?;
    if event_id != event.id {
        return Err(invalid("`cursor` belongs to another event's list"));
    }
    let want_order = if order == ListOrder::Newest { "n" } else { "o" };
    if filter_text != filter.as_str() || order_text != want_order {
        return Err(invalid("`cursor` belongs to a list of another filter or order: ask for the first page again"));
    }
    Ok((at, id))
}

/// The opaque change cursor of an event's change number.
fn change_cursor(event: &EventRow, seq: i64) -> String {
    format!("c{:x}.{seq:x}", event.id)
}

/// The change number a change cursor names; `400 invalid_query` if it is
/// not one this server issued for this event.
pub(crate) fn decode_change_cursor(cursor: &str, event: &EventRow) -> Result<i64> {
    let malformed = || invalid("`since` is not a change cursor this server issued");
    let (event_id, seq) = cursor.strip_prefix('c').and_then(|rest| rest.split_once('.')).ok_or_else(malformed)?;
    let event_id = i64::from_str_radix(event_id, 16).map_err(|_| malformed())?;
    let seq = i64::from_str_radix(seq, 16).ok().filter(|s| *s >= 0).ok_or_else(malformed)?;
    if event_id != event.id {
        return Err(invalid("`since` belongs to another event's list"));
    }
    Ok(seq)
}

/// The counts of the answer, with their sum.
async fn counts(records: &Records, event: &EventRow) -> Result<MediaCounts> {
    let c = records.media_counts(event.id).await?;
    Ok(MediaCounts {
        pending: c.pending,
        approved: c.approved,
        rejected: c.rejected,
        all: c.pending + c.approved + c.rejected,
    })
}

/// `GET /v1/events/{slug}/media`
#[utoipa::path(get, path = "/v1/events/{slug}/media", tag = "hosts",
    params(("slug" = String, Path, description = "Event slug"), MediaQuery),
    security(("host" = [])),
    responses(
        (status = 200, body = MediaListResponse, description = "A page of the event's media (by filter and order, after `cursor`), or what changed since `since`; with the counts per filter and how many uploads were deduplicated (absent when nothing changed since `since`), and the change cursor to ask with next. Compressed when the request accepts it"),
        (status = 400, body = upload_once_core::wire::Problem, content_type = "application/problem+json", description = "invalid_query: an unknown filter or order, a limit outside 1–500, a cursor this server did not issue for this event (or for another filter or order), `cursor` with `since`, or `moderation` that says other than `filter`"),
        CredentialRefused,
    ))]
pub async fn list_media(
    State(records): State<Records>,
    State(links): State<Links>,
    State(media): State<Arc<MediaServices>>,
    HostOfEvent(event): HostOfEvent,
    ApiQuery(query): ApiQuery<MediaQuery>,
) -> Result<Json<MediaListResponse>> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(invalid("`limit` must be from 1 to 500"));
    }
    let filter = match (query.filter, query.moderation) {
        (Some(f), Some(m)) if f.moderation() != Some(m) => {
            return Err(invalid("`moderation` and `filter` name different media: send `filter` alone"));
        }
        (Some(f), _) => f,
        (None, m) => MediaFilter::of(m),
    };
    let order = query.order.unwrap_or_default();
    if let Some(since) = &query.since {
        if query.cursor.is_some() {
            return Err(invalid("`cursor` pages a list; `since` asks what changed: send one of them"));
        }
        let after = decode_change_cursor(since.trim(), &event)?;
        return changes(&records, &links, &media, &event, after, limit).await;
    }
    let after = query.cursor.as_deref().map(|c| decode_page_cursor(c.trim(), &event, filter, order)).transpose()?;
    // The change number first: a change made while the page is read is
    // told again by the next read of what changed, never missed.
    let seq = records.change_seq(event.id).await?;
    let listing =
        MediaListing { event_id: event.id, filter, newest_first: order == ListOrder::Newest, after, limit: limit + 1 };
    let mut rows = records.media_page(&listing).await?;
    let next_cursor = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|last| page_cursor(&event, filter, order, last))
    } else {
        None
    };
    Ok(Json(MediaListResponse {
        media: crate::services::views::host_media(&links, &media, &event, &rows).await?,
        gone: Vec::new(),
        deduplicated: Some(records.deduplicated(event.id).await?),
        counts: Some(counts(&records, &event).await?),
        next_cursor,
        changes: change_cursor(&event, seq),
        more: false,
    }))
}

/// What changed in the event's media after change number `after`.
async fn changes(
    records: &Records,
    links: &Links,
    media: &MediaServices,
    event: &EventRow,
    after: i64,
    limit: u32,
) -> Result<Json<MediaListResponse>> {
    let seq = records.change_seq(event.id).await?;
    if seq <= after {
        // Nothing changed: the answer costs one read of the event's number.
        return Ok(Json(MediaListResponse {
            media: Vec::new(),
            gone: Vec::new(),
            deduplicated: None,
            counts: None,
            next_cursor: None,
            changes: change_cursor(event, after.max(seq)),
            more: false,
        }));
    }
    let rows = records.media_changes(event.id, after, limit).await?;
    let more = rows.len() == limit as usize;
    // Up to the last change read when more wait; else up to the number read
    // first (a change committed since is told by the next read).
    let upto =
        if more { rows.last().map_or(seq, |m| m.change_seq) } else { seq.max(rows.last().map_or(0, |m| m.change_seq)) };
    let (gone, listed): (Vec<MediaRow>, Vec<MediaRow>) = rows.into_iter().partition(|m| m.withdrawn);
    Ok(Json(MediaListResponse {
        media: crate::services::views::host_media(links, media, event, &listed).await?,
        gone: gone.iter().map(|m| m.id).collect(),
        deduplicated: Some(records.deduplicated(event.id).await?),
        counts: Some(counts(records, event).await?),
        next_cursor: None,
        changes: change_cursor(event, upto),
        more,
    }))
}
