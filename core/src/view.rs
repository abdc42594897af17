//! What the app sees: one attempt as a plain value (`AttemptView` in
//! TypeScript) and what `add` did with each file (`AddOutcome`). The
//! browser client hands these to JS through their serde derives, so the
//! field names here are the JS API.

use serde::Serialize;
use uuid::Uuid;

use crate::attempt::{AttemptError, AttemptRecord, Confirmation, ModerationView, Transfer};
use crate::time::UnixMillis;
use crate::wire::MediaSummary;

/// One attempt as the app sees it: the record's three axes apart, progress,
/// and where this page stands with it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    /// The attempt id.
    pub id: Uuid,
    /// The event slug.
    pub event: String,
    /// The file's name.
    pub file_name: String,
    /// The file's size in bytes.
    pub size: u64,
    /// The file's content type.
    #[serde(rename = "type")]
    pub content_type: String,
    /// `File.lastModified`.
    pub last_modified: i64,
    /// The server's object key, once authorized.
    pub object_key: Option<String>,
    /// Where the bytes are.
    pub transfer: Transfer,
    /// Bytes sent so far (the whole file once uploaded).
    pub bytes_sent: f64,
    /// Bytes to send.
    pub bytes_total: f64,
    /// Whether the app accepted the media record.
    pub confirmation: Confirmation,
    /// Whether the host approved it.
    pub moderation: ModerationView,
    /// The media record, once confirmed.
    pub media: Option<MediaSummary>,
    /// The media this photo already was in the event (the same bytes,
    /// shared before by this guest or another): stored only once (a file in
    /// one PUT was not sent again; a file in parts was sent, and its copy
    /// dropped at confirm), and `media` is that one.
    pub duplicate_of: Option<Uuid>,
    /// The last error.
    pub error: Option<AttemptError>,
    /// Consecutive retryable failures so far.
    pub retries: u32,
    /// When the next retry may start.
    pub next_retry_at: Option<UnixMillis>,
    /// When the guest picked the file.
    pub created_at: UnixMillis,
    /// When the record last changed.
    pub updated_at: UnixMillis,
    /// The expired attempt this one continues.
    pub replaces: Option<Uuid>,
    /// The attempt that continues this expired one.
    pub replaced_by: Option<Uuid>,
    /// Nothing more happens by itself.
    pub terminal: bool,
    /// This page drives it (another page may, otherwise).
    pub driven_here: bool,
    /// The file's bytes are available here (in memory or kept).
    pub file_held: bool,
    /// The file's bytes are kept in IndexedDB for a reload.
    pub file_kept: bool,
    /// Why they are not kept, when they are not: `too_large`,
    /// `over_total`, `no_room` (the browser's storage estimate) or `refused`:
    /// always a [`NotKept`](crate::attempt::NotKept)'s text.
    #[cfg_attr(test, ts(as = "Option<crate::attempt::NotKept>"))]
    pub not_kept_reason: Option<&'static str>,
    /// The guest paused the transfer (`pause`); nothing is sent until
    /// `resume`.
    pub paused: bool,
    /// Its bytes were handed to a Background Fetch (`handOver`): the
    /// browser sends them, also after the tab is closed, and the service
    /// worker confirms it; `takeBack` drives it here again.
    pub in_background: bool,
    /// Waiting for the browser to come back online.
    pub offline: bool,
    /// For a file that goes up in parts: how many the store holds.
    pub parts_done: Option<u32>,
    /// For a file that goes up in parts: how many there are.
    pub part_count: Option<u32>,
}

/// Where a page stands with one attempt, beside its record.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PageFacts {
    /// Bytes sent of bytes total, while a PUT runs.
    pub progress: Option<(f64, f64)>,
    /// This page drives it.
    pub driven_here: bool,
    /// The bytes are held (memory or IndexedDB).
    pub file_held: bool,
    /// The bytes are kept in IndexedDB.
    pub file_kept: bool,
    /// Why they are not, when the page knows.
    pub not_kept: Option<&'static str>,
    /// The browser believes it is online.
    pub online: bool,
}

impl AttemptView {
    /// The view of a record, with what the page knows about it.
    pub fn of(a: &AttemptRecord, facts: PageFacts) -> AttemptView {
        let total = a.file.size as f64;
        let (bytes_sent, bytes_total) = match (a.transfer, facts.progress) {
            (Transfer::Uploaded, _) => (total, total),
            (Transfer::Uploading, Some(p)) => p,
            // A multipart file that is not being sent right now still has
            // its stored parts.
            (_, Some(p)) if a.multipart.is_some() => p,
            _ => (0.0, total),
        };
        AttemptView {
            id: a.id,
            event: a.event.clone(),
            file_name: a.file.name.clone(),
            size: a.file.size,
            content_type: a.file.content_type.clone(),
            last_modified: a.file.last_modified,
            object_key: a.object_key.clone(),
            transfer: a.transfer,
            bytes_sent,
            bytes_total,
            confirmation: a.confirmation,
            moderation: a.moderation,
            media: a.media.clone(),
            duplicate_of: a.media.as_ref().filter(|m| m.duplicate).map(|m| m.id),
            error: a.error.clone(),
            retries: a.retries,
            next_retry_at: a.next_retry_at,
            created_at: a.created_at,
            updated_at: a.updated_at,
            replaces: a.replaces,
            replaced_by: a.replaced_by,
            terminal: a.is_terminal(),
            driven_here: facts.driven_here,
            file_held: facts.file_held,
            file_kept: facts.file_kept,
            not_kept_reason: if facts.file_kept { None } else { facts.not_kept },
            paused: a.paused && !a.background && !a.is_terminal(),
            in_background: a.background && !a.is_terminal(),
            offline: !facts.online && !a.is_terminal() && !a.needs_file(),
            parts_done: a.multipart.as_ref().map(|l| l.done.len() as u32),
            part_count: a.multipart.as_ref().map(|l| l.part_count),
        }
    }
}

/// `{code, message}` of an error, as JS sees it (`AttemptErrorInfo`,
/// `StorageErrorInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ErrorInfo {
    /// Stable code.
    pub code: String,
    /// For people.
    pub message: String,
}

/// What the service worker did with the attempts of one Background Fetch
/// when it ended (`settleBackgroundFetch`, `BackgroundFetchSettled`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BackgroundFetchSettled {
    /// Attempts the fetch carried.
    pub total: u32,
    /// Confirmed (by this settle, or before it).
    pub confirmed: u32,
    /// Cancelled: the guest cancelled the fetch in the browser's download UI.
    pub cancelled: u32,
    /// Left for the next visit (not stored, or driven by an open page).
    pub waiting: u32,
}

/// What `add` did with one file (`AddOutcome`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)]
pub enum AddOutcome {
    /// The file has an attempt.
    Accepted {
        /// Always `true`.
        ok: bool,
        /// `new`, `reattached`, `duplicate` or `not_same_file`.
        status: &'static str,
        /// The attempt.
        attempt: AttemptView,
        /// With `not_same_file`: the attempt that still waits for its own
        /// file.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        waiting: Option<String>,
    },
    /// Refused before any network.
    Refused {
        /// Always `false`.
        ok: bool,
        /// The file's name.
        #[serde(rename = "fileName")]
        file_name: String,
        /// Why.
        error: ErrorInfo,
    },
}
