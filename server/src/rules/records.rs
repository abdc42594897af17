//! The records the rules decide on: events, sessions, attempts, media and
//! what the record store keeps beside them, as plain values. The record
//! store ([`crate::store`]) reads and writes them; nothing here does I/O.

use upload_once_core::time::UnixMillis;
use upload_once_core::wire::{AttemptState, Dedup, Moderation, ModerationDecision, ModerationPolicy};
use uuid::Uuid;

use super::multipart::PartPlan;

/// An event as stored. To create one, fill every field but `id`, which
/// the database assigns (see [`RecordStore::create_event`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRow {
    /// Internal id, assigned by the database when the event is created.
    pub id: i64,
    /// URL-safe name.
    pub slug: String,
    /// Title.
    pub title: String,
    /// Size limit in bytes.
    pub max_file_bytes: u64,
    /// Allowed content-type patterns.
    pub allowed_types: Vec<String>,
    /// Moderation policy.
    pub moderation: ModerationPolicy,
    /// Where the same bytes are stored once ([`super::dedup`]).
    pub dedup: Dedup,
    /// The guest code (shared in links, so kept in clear).
    pub guest_code: String,
    /// SHA-256 of the host token.
    pub host_token_hash: String,
    /// SHA-256 of the wall token.
    pub wall_token_hash: String,
    /// Creation time.
    pub created_at: UnixMillis,
}

/// A guest session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRow {
    /// Internal id.
    pub id: i64,
    /// The event it belongs to.
    pub event_id: i64,
    /// When it stops opening new attempts (its own existing attempts are
    /// still answered after).
    pub expires_at: UnixMillis,
    /// The host removed it: it opens nothing more.
    pub revoked: bool,
}

impl SessionRow {
    /// Whether the session may still authorize new attempts.
    pub fn is_live(&self, now: UnixMillis) -> bool {
        now < self.expires_at
    }
}

/// An attempt as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptRow {
    /// Internal id.
    pub row_id: i64,
    /// The client-minted id (unique per session).
    pub id: Uuid,
    /// The session that authorized it.
    pub session_id: i64,
    /// The event.
    pub event_id: i64,
    /// Original filename.
    pub filename: String,
    /// Authorized size.
    pub size: u64,
    /// Authorized content type.
    pub content_type: String,
    /// Authorized SHA-256, if any.
    pub sha256: Option<String>,
    /// Server-generated object key.
    pub object_key: String,
    /// State.
    pub state: AttemptState,
    /// Rejection code, when rejected.
    pub reject_code: Option<String>,
    /// Rejection reason, when rejected.
    pub reject_reason: Option<String>,
    /// Creation time.
    pub created_at: UnixMillis,
    /// Expiry time unless confirmed.
    pub expires_at: UnixMillis,
    /// The media record, when confirmed: the one it created, or (a
    /// duplicate) the one another attempt stored.
    pub media_id: Option<Uuid>,
    /// How the file goes up in parts, fixed at authorize; `None` for one
    /// PUT.
    pub plan: Option<PartPlan>,
    /// The object store's multipart upload, once the first parts were
    /// signed.
    pub upload_id: Option<String>,
}

/// A new attempt (authorize).
#[derive(Clone, Debug)]
pub struct NewAttempt {
    /// The client-minted id.
    pub id: Uuid,
    /// The session.
    pub session_id: i64,
    /// The event.
    pub event_id: i64,
    /// Original filename.
    pub filename: String,
    /// Size.
    pub size: u64,
    /// Content type.
    pub content_type: String,
    /// SHA-256, if given.
    pub sha256: Option<String>,
    /// Server-generated object key.
    pub object_key: String,
    /// Now.
    pub created_at: UnixMillis,
    /// Expiry.
    pub expires_at: UnixMillis,
    /// Until when its bytes count against the quotas without a sign of
    /// life: while its first URL can still land bytes.
    pub reserved_until: UnixMillis,
    /// How the file goes up in parts; `None` for one PUT.
    pub plan: Option<PartPlan>,
    /// What the session and the event may hold, checked in the same
    /// transaction as the insert.
    pub quotas: upload_once_core::decide::quota::AttemptQuotas,
}

/// How long a session that authorized nothing counts against its event's
/// and its address's hourly caps: 10 minutes.
pub const EMPTY_SESSION_COUNTS_MS: i64 = 10 * 60 * 1000;

/// A guest session to open.
#[derive(Clone, Debug)]
pub struct NewSession {
    /// The event.
    pub event_id: i64,
    /// The token's hash.
    pub token_hash: String,
    /// Now.
    pub now: UnixMillis,
    /// Its expiry.
    pub expires_at: UnixMillis,
    /// The client address it is opened from (an IPv6 address by its /56),
    /// if known.
    pub client_key: Option<String>,
    /// Sessions the event may open per hour.
    pub max_per_hour: u64,
    /// Of those, sessions one client address may open.
    pub max_per_client_per_hour: u64,
}

/// A host's decision on one media record of its event
/// ([`RecordStore::moderate`]).
#[derive(Clone, Copy, Debug)]
pub struct HostDecision<'a> {
    /// The host's event: a media record of another event is not touched.
    pub event_id: i64,
    /// The media record.
    pub media_id: Uuid,
    /// Approve or reject.
    pub decision: ModerationDecision,
    /// Why, as the host wrote it (trimmed), if at all.
    pub reason: Option<&'a str>,
    /// Now.
    pub now: UnixMillis,
}

/// A host's removal of a guest session of its event
/// ([`RecordStore::revoke_session`]).
#[derive(Clone, Copy, Debug)]
pub struct GuestRemoval {
    /// The host's event: a session of another event is not touched.
    pub event_id: i64,
    /// The guest's session.
    pub session_id: i64,
    /// Whether the address the session was opened from is shut out of the
    /// event too.
    pub block_address: bool,
    /// Now.
    pub now: UnixMillis,
}

/// A media record as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaRow {
    /// Server-minted id.
    pub id: Uuid,
    /// The attempt's internal id.
    pub attempt_row_id: i64,
    /// The attempt's client-minted id.
    pub attempt_id: Uuid,
    /// The guest session that uploaded it.
    pub session_id: i64,
    /// The event.
    pub event_id: i64,
    /// The event slug.
    pub event_slug: String,
    /// Object key.
    pub object_key: String,
    /// Original filename.
    pub filename: String,
    /// Stored size.
    pub size: u64,
    /// Stored content type.
    pub content_type: String,
    /// SHA-256, if known.
    pub sha256: Option<String>,
    /// For a file stored in parts: SHA-256 over the parts' digests, `-`,
    /// the part count.
    pub composite_sha256: Option<String>,
    /// Moderation state.
    pub moderation: Moderation,
    /// The host's reason.
    pub moderation_reason: Option<String>,
    /// Position on the wall (set when approved).
    pub wall_seq: Option<i64>,
    /// Creation time.
    pub created_at: UnixMillis,
    /// Time of the last moderation decision.
    pub moderated_at: Option<UnixMillis>,
    /// When the host rejected it, while it stays rejected (the retention
    /// runs from here).
    pub rejected_at: Option<UnixMillis>,
    /// Rejected past the retention: its objects are (being) deleted, and no
    /// approval brings it back.
    pub removed: bool,
    /// Withdrawn by its guest: out of the host's list.
    pub withdrawn: bool,
    /// The event's change number of its last change (see
    /// [`MediaListing`]).
    pub change_seq: i64,
}

/// Which media a page of the host's list holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MediaFilter {
    /// Waiting for the host.
    Pending,
    /// Approved.
    Approved,
    /// Rejected.
    Rejected,
    /// Every one the list shows.
    #[default]
    All,
}

impl MediaFilter {
    /// The one moderation state it holds, `None` for all.
    pub fn moderation(self) -> Option<Moderation> {
        match self {
            MediaFilter::Pending => Some(Moderation::Pending),
            MediaFilter::Approved => Some(Moderation::Approved),
            MediaFilter::Rejected => Some(Moderation::Rejected),
            MediaFilter::All => None,
        }
    }

    /// The filter of one moderation state (or all).
    pub fn of(moderation: Option<Moderation>) -> MediaFilter {
        match moderation {
            Some(Moderation::Pending) => MediaFilter::Pending,
            Some(Moderation::Approved) => MediaFilter::Approved,
            Some(Moderation::Rejected) => MediaFilter::Rejected,
            None => MediaFilter::All,
        }
    }

    /// Its stable text (in cursors).
    pub fn as_str(self) -> &'static str {
        match self {
            MediaFilter::Pending => "pending",
            MediaFilter::Approved => "approved",
            MediaFilter::Rejected => "rejected",
            MediaFilter::All => "all",
        }
    }
}

/// One page of the host's list: media of one event (not withdrawn), of
/// one filter, in upload order (`created_at`, then id), oldest or newest
/// first, after a place in that order.
///
/// The host's list is read as a page at a time, and then by what changed
/// since: every change to a media record (confirmed, decided, withdrawn,
/// its renditions settled) takes the event's next change number, under the
/// event row's lock held to the commit, so within an event the numbers are
/// taken in commit order, and a reader that asks for what changed after the
/// last number it saw misses nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaListing {
    /// The event.
    pub event_id: i64,
    /// Which media.
    pub filter: MediaFilter,
    /// Newest first (else oldest first).
    pub newest_first: bool,
    /// The last media of the previous page: its `created_at` and id.
    pub after: Option<(UnixMillis, Uuid)>,
    /// At most this many.
    pub limit: u32,
}

/// How many media of an event the host's list holds, per moderation state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MediaCounts {
    /// Waiting for the host.
    pub pending: u64,
    /// Approved.
    pub approved: u64,
    /// Rejected.
    pub rejected: u64,
}

/// A media record to create at confirm.
#[derive(Clone, Debug)]
pub struct NewMedia {
    /// Server-minted id.
    pub id: Uuid,
    /// Stored size.
    pub size: u64,
    /// Stored content type.
    pub content_type: String,
    /// SHA-256, if known.
    pub sha256: Option<String>,
    /// For a file stored in parts, when every part's digest is known.
    pub composite_sha256: Option<String>,
    /// Initial moderation state (`pending`, or `approved` without
    /// moderation).
    pub moderation: Moderation,
    /// Now.
    pub created_at: UnixMillis,
}

/// Which credential of an event the host rotates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Credential {
    /// The guest code (printed on cards, in guest links and on the wall).
    GuestCode,
    /// The wall's bearer token.
    WallToken,
    /// The host's own bearer token.
    HostToken,
}

/// What the sweeper has still to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepBacklog {
    /// Authorized attempts past their expiry, not expired yet.
    pub expired_attempts: u64,
    /// Expired or rejected attempts whose object is not deleted (or whose
    /// multipart upload is not aborted) yet.
    pub dead_objects: u64,
}

/// Where a confirmed attempt's bytes are indexed: the content key in its
/// event's dedup scope (see [`super::dedup`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The event.
    pub event_id: i64,
    /// 0 for the whole event (`event`), else the guest session (`guest`).
    pub scope_id: i64,
    /// The SHA-256 the store verified (one PUT) or the composite checksum
    /// (parts), lowercase hex.
    pub content_key: String,
}

/// A host's decision over every media waiting as of a change number, which
/// the server carries out in batches (`POST /v1/events/{slug}/moderation/bulk`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkModeration {
    /// Its id.
    pub id: Uuid,
    /// The event.
    pub event_id: i64,
    /// Approve or reject.
    pub decision: ModerationDecision,
    /// Only media confirmed by this change number (what the host had
    /// seen, whatever changed in them since, such as a preview made).
    pub upto_seq: i64,
    /// How many were waiting when it began.
    pub total: u64,
    /// How many it has decided.
    pub done: u64,
    /// Whether it has ended.
    pub finished: bool,
    /// Until when the instance that carries it out holds it.
    pub claimed_until: UnixMillis,
}
