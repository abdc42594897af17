//! The record store: events, guest sessions, attempts and media records.
//!
//! Handlers only see the [`RecordStore`] trait. It is implemented once, in
//! SQL ([`sql::SqlStore`]), over SQLite (the embedded default) or
//! PostgreSQL (production); what differs between the two is in
//! [`dialect::Dialect`]. Exactly-once confirm rests on [`AttemptLock`]: a
//! database transaction holding the attempt's row lock, inside which the
//! object is checked and the media record created.

pub mod dialect;
pub mod migrate;
pub mod quota;
pub mod sql;

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use upload_once_core::time::UnixMillis;
use upload_once_core::wire::{Dedup, Moderation, ModerationDecision, ModerationPolicy};
use uuid::Uuid;

use crate::error::Result;
pub use crate::rules::multipart::PartDigest;
pub use crate::rules::records::*;

/// A database transaction holding one attempt's row lock. It is its own
/// guard: the methods that take `self` finish it; dropping it without one
/// (an early return, an error, nothing to change) rolls back and releases
/// the lock. No caller releases it by hand.
#[async_trait]
pub trait AttemptLock: Send {
    /// The attempt as read under the lock.
    fn attempt(&self) -> &AttemptRow;

    /// The media record of a confirmed attempt.
    async fn media(&mut self) -> Result<MediaRow>;

    /// Records the object store's multipart upload on the attempt (kept
    /// when the lock commits).
    async fn set_upload_id(&mut self, upload_id: &str) -> Result<()>;

    /// Records the SHA-256 each part is signed with (`None`: none). A part
    /// signed twice keeps its digest only if both were the same.
    async fn record_part_digests(&mut self, parts: &[(u32, Option<String>)]) -> Result<()>;

    /// The part digests recorded for this attempt.
    async fn part_digests(&mut self) -> Result<Vec<PartDigest>>;

    /// Commits what was recorded, leaving the attempt's state as it is.
    async fn commit(self: Box<Self>) -> Result<()>;

    /// Creates the media record, marks the attempt confirmed, commits.
    async fn confirm(self: Box<Self>, media: NewMedia) -> Result<MediaRow>;

    /// Creates the media record and indexes it under `entry`, or, when that
    /// scope already holds these bytes, confirms the attempt as a duplicate
    /// of the media indexed there (no media record of its own); commits.
    /// Create-or-return in this one transaction: two attempts of the same
    /// bytes make one media. The bool is true for a duplicate.
    async fn confirm_indexed(self: Box<Self>, media: NewMedia, entry: &IndexEntry) -> Result<(MediaRow, bool)>;

    /// Marks the attempt rejected, commits.
    async fn reject(self: Box<Self>, code: &str, reason: &str) -> Result<()>;

    /// The guest withdraws a confirmed attempt: the media record it created
    /// (not one it duplicates, which is another upload's) is rejected with
    /// `reason`, removed at once (its objects are deleted by the sweeper),
    /// kept out of the host's list and out of the content index; commits.
    /// The media as it is now, `None` when the attempt created none.
    async fn withdraw_media(self: Box<Self>, reason: &str, now: UnixMillis) -> Result<Option<MediaRow>>;

    /// Marks the attempt expired, commits.
    async fn expire(self: Box<Self>) -> Result<()>;
}

/// Where records live.
#[async_trait]
pub trait RecordStore: Send + Sync + 'static {
    /// Checks the database answers.
    async fn ping(&self) -> Result<()>;

    /// Checks the database takes writes: one small committed write, waiting
    /// at most [`crate::ops::LOCK_WAIT`] for the write lock.
    async fn probe_write(&self, now: UnixMillis) -> Result<()>;

    /// Connections the pool closed because they came back still inside a
    /// transaction (see [`keep_released_connection`]).
    fn dirty_connections_discarded(&self) -> u64;

    /// Stores a new event and returns it with the `id` the database gave
    /// it (the `id` passed in is not stored); `slug_taken` if the slug
    /// exists.
    async fn create_event(&self, event: EventRow) -> Result<EventRow>;

    /// An event by slug.
    async fn event_by_slug(&self, slug: &str) -> Result<Option<EventRow>>;

    /// An event by internal id.
    async fn event_by_id(&self, id: i64) -> Result<Option<EventRow>>;

    /// Replaces an event's host token (the demo start prints a fresh one).
    async fn set_host_token_hash(&self, event_id: i64, hash: &str) -> Result<()>;

    /// Replaces one credential of an event: the guest code in clear, a
    /// token by its hash. The old one stops working with the next request.
    async fn rotate_credential(&self, event_id: i64, credential: Credential, value: &str) -> Result<()>;

    /// Marks an event deleted: from now on it is not found, by slug or id,
    /// and its guest sessions are unknown. Its rows stay until
    /// [`RecordStore::purge_event_rows`]; `false` if it was already deleted.
    async fn mark_event_deleted(&self, event_id: i64, now: UnixMillis) -> Result<bool>;

    /// Events marked deleted whose rows are still there (the sweeper
    /// finishes them).
    async fn deleted_events(&self, limit: u32) -> Result<Vec<i64>>;

    /// Every attempt of an event, whatever its state (its objects are to be
    /// deleted).
    async fn event_attempts(&self, event_id: i64) -> Result<Vec<AttemptRow>>;

    /// Deletes every row of a deleted event (sessions, attempts, media, part
    /// digests, index entries, rendition jobs) and the event, in one
    /// transaction, which also keeps each attempt's object key for one more
    /// delete at `late_delete_at` ([`RecordStore::due_late_deletes`]).
    async fn purge_event_rows(&self, event_id: i64, late_delete_at: UnixMillis) -> Result<()>;

    /// Object keys of deleted events due for their late delete at `now`
    /// (`limit` at most): a signed URL handed out before the event was
    /// deleted may have landed an object since, or a rendition worker
    /// written one.
    async fn due_late_deletes(&self, now: UnixMillis, limit: u32) -> Result<Vec<String>>;

    /// Forgets a late delete once done.
    async fn forget_late_delete(&self, object_key: &str) -> Result<()>;

    /// Deletes, `limit` at most of each, the records of attempts that
    /// ended without a media (expired or rejected, their object deleted)
    /// and expired before `cutoff`, with their part digests; then guest
    /// sessions that lapsed before `cutoff` and have no attempt left. How
    /// many attempts, and how many sessions.
    async fn forget_ended(&self, cutoff: UnixMillis, limit: u32) -> Result<(u64, u64)>;

    /// Marks removed every media rejected at or before `cutoff` and still
    /// rejected; how many.
    async fn remove_rejected(&self, cutoff: UnixMillis, now: UnixMillis) -> Result<u64>;

    /// Removed media whose objects are not deleted yet.
    async fn removed_media_with_objects(&self, limit: u32) -> Result<Vec<MediaRow>>;

    /// Records that a removed media's objects (original and renditions) are
    /// deleted.
    async fn mark_media_objects_deleted(&self, id: Uuid) -> Result<()>;

    /// Creates a guest session, unless the event's sessions of the hour
    /// before `now` are at its cap, or those opened from the same client
    /// address are at the address's share (`403 too_many_sessions`; counted
    /// and inserted in one transaction). A session that authorized nothing
    /// counts only for [`EMPTY_SESSION_COUNTS_MS`] after it was opened.
    async fn create_session(&self, session: NewSession) -> Result<SessionRow>;

    /// Moves an authorized attempt's reservation on to at least `until`
    /// (a URL of it was signed, or bytes of it arrived).
    async fn reserve(&self, attempt_row_id: i64, until: UnixMillis) -> Result<()>;

    /// The host removes a guest session of its event: it is marked revoked,
    /// its authorized attempts are rejected with `session_revoked` (they are
    /// returned, to abort their uploads), and with `block_address` the
    /// address it was opened from is shut out of the event. `None` when the
    /// event has no such session.
    async fn revoke_session(&self, removal: GuestRemoval) -> Result<Option<Vec<AttemptRow>>>;

    /// Moves a session's expiry to at least `until`.
    async fn extend_session(&self, session_id: i64, until: UnixMillis) -> Result<()>;

    /// A session by token hash, live or lapsed (its `expires_at` says
    /// which).
    async fn session_by_token_hash(&self, hash: &str) -> Result<Option<SessionRow>>;

    /// Creates the attempt, or returns the one this session already has with
    /// that id (create-or-return). The bool is true when it was created.
    /// Attempt ids are unique across sessions: an id another session has is
    /// `422 id_reused`, and nothing is stored. A new attempt must fit in its
    /// quotas (`403 too_many_unconfirmed`, `session_bytes_exceeded`,
    /// `event_bytes_exceeded`), counted in the transaction that inserts it.
    /// With `dedup`, where the event indexes the attempt's claimed SHA-256:
    /// when the index holds those bytes as a file of the same size and
    /// content type, the attempt is created already confirmed, as a
    /// duplicate of that media (no upload; it adds no bytes to the quotas,
    /// and passes them as such).
    async fn authorize(&self, attempt: NewAttempt, dedup: Option<IndexEntry>) -> Result<(AttemptRow, bool)>;

    /// One attempt of a session.
    async fn attempt(&self, session_id: i64, id: Uuid) -> Result<Option<AttemptRow>>;

    /// Several attempts of a session (missing ones are left out).
    async fn attempts(&self, session_id: i64, ids: &[Uuid]) -> Result<Vec<AttemptRow>>;

    /// The attempt owning an object key.
    async fn attempt_by_object_key(&self, key: &str) -> Result<Option<AttemptRow>>;

    /// Locks one attempt of a session for a state change.
    async fn lock_attempt(&self, session_id: i64, id: Uuid) -> Result<Option<Box<dyn AttemptLock>>>;

    /// Locks an attempt by internal id (sweeper).
    async fn lock_attempt_row(&self, row_id: i64) -> Result<Option<Box<dyn AttemptLock>>>;

    /// Internal ids of authorized attempts whose expiry has passed.
    async fn expired_attempts(&self, now: UnixMillis, limit: u32) -> Result<Vec<i64>>;

    /// Expired or rejected attempts whose object may still exist.
    async fn attempts_with_dead_objects(&self, limit: u32) -> Result<Vec<AttemptRow>>;

    /// The part digests recorded for these attempts.
    async fn part_digests(&self, attempt_row_ids: &[i64]) -> Result<Vec<PartDigest>>;

    /// Records that an attempt's object was deleted (and its multipart
    /// upload aborted).
    async fn mark_object_deleted(&self, row_id: i64) -> Result<()>;

    /// What the sweeper has still to do (the metrics).
    async fn sweep_backlog(&self, now: UnixMillis) -> Result<SweepBacklog>;

    /// One media record.
    async fn media(&self, id: Uuid) -> Result<Option<MediaRow>>;

    /// Media records of several attempts, keyed by attempt internal id.
    async fn media_for_attempts(&self, attempt_row_ids: &[i64]) -> Result<Vec<MediaRow>>;

    /// An event's media, oldest first, optionally only one moderation state.
    async fn list_media(&self, event_id: i64, moderation: Option<Moderation>) -> Result<Vec<MediaRow>>;

    /// One page of the host's list ([`MediaListing`]).
    async fn media_page(&self, listing: &MediaListing) -> Result<Vec<MediaRow>>;

    /// The media of an event changed after change number `after`, withdrawn
    /// ones too, in change order, at most `limit`.
    async fn media_changes(&self, event_id: i64, after: i64, limit: u32) -> Result<Vec<MediaRow>>;

    /// The event's last change number.
    async fn change_seq(&self, event_id: i64) -> Result<i64>;

    /// How many media the host's list holds, per moderation state (read
    /// from an index, not the rows).
    async fn media_counts(&self, event_id: i64) -> Result<MediaCounts>;

    /// Records a bulk decision over the event's media waiting as of change
    /// number `upto_seq`, claimed until `claimed_until` by its caller.
    async fn start_bulk(
        &self,
        event_id: i64,
        decision: ModerationDecision,
        upto_seq: i64,
        now: UnixMillis,
        claimed_until: UnixMillis,
    ) -> Result<BulkModeration>;

    /// A bulk decision of an event.
    async fn bulk(&self, event_id: i64, id: Uuid) -> Result<Option<BulkModeration>>;

    /// Claims one unfinished bulk decision whose claim lapsed (its instance
    /// stopped): until `claimed_until`.
    async fn claim_lapsed_bulk(&self, now: UnixMillis, claimed_until: UnixMillis) -> Result<Option<BulkModeration>>;

    /// The next media a bulk decision is to decide: still waiting, confirmed
    /// by its change number, oldest first, at most `limit`.
    async fn bulk_batch(&self, bulk: &BulkModeration, limit: u32) -> Result<Vec<Uuid>>;

    /// Records a batch's progress (`decided` more), its claim extended to
    /// `claimed_until`, or its end.
    async fn bulk_progress(&self, id: Uuid, decided: u64, claimed_until: UnixMillis, finished: bool) -> Result<()>;

    /// Applies one decision to several media of an event in one
    /// transaction (a bulk decision's batch): the records it found (those
    /// gone from the event are left out).
    async fn moderate_many(
        &self,
        event_id: i64,
        ids: &[Uuid],
        decision: ModerationDecision,
        now: UnixMillis,
    ) -> Result<Vec<MediaRow>>;

    /// Applies a host decision; `None` if the media is not in that event.
    async fn moderate(&self, decision: HostDecision<'_>) -> Result<Option<MediaRow>>;

    /// Gives an approved media record whose renditions are settled the
    /// next wall position, under the wall's lock; the record when it took
    /// one, `None` when it takes none (not approved, placed already, its
    /// renditions not settled, removed, or no such record). A rendition
    /// job's end calls it, after the job's state is written.
    async fn place_on_wall(&self, media_id: Uuid) -> Result<Option<MediaRow>>;

    /// Approved media records whose renditions are settled and that have no
    /// wall position (an instance that ended a job died before placing
    /// it), at most `limit`.
    async fn unplaced_on_wall(&self, limit: u32) -> Result<Vec<Uuid>>;

    /// The wall position just before the event's newest `n` items on the
    /// wall (0 when it has no more than `n`).
    async fn wall_before_last(&self, event_id: i64, n: u32) -> Result<i64>;

    /// Approved media after a wall position, in approval order.
    async fn wall(&self, event_id: i64, after_seq: i64, limit: u32) -> Result<Vec<MediaRow>>;

    /// Counts, for tests and checkers: (attempts, media).
    async fn counts(&self) -> Result<(u64, u64)>;

    // --- the content index (crate::rules::dedup) ---------------------------

    /// How many of an event's attempts were confirmed as duplicates.
    async fn deduplicated(&self, event_id: i64) -> Result<u64>;

    /// Attempts confirmed as duplicates whose object is not deleted yet and
    /// past their expiry (no URL of theirs works any more).
    async fn duplicate_objects(&self, now: UnixMillis, limit: u32) -> Result<Vec<AttemptRow>>;
}

/// The pool's rule for a connection that comes back (its `after_release`
/// hook): one still inside a transaction is closed, never reused, which
/// rolls the transaction back and frees its locks. A request future dropped
/// between a `BEGIN` and the value that would have ended it (a client that
/// hangs up at the wrong moment) would otherwise hand the next request a
/// connection that holds SQLite's write lock, or PostgreSQL's row locks,
/// with nothing left to release them.
pub fn keep_released_connection(in_transaction: bool, discarded: &AtomicU64) -> bool {
    if in_transaction {
        let n = discarded.fetch_add(1, Ordering::SeqCst) + 1;
        tracing::warn!(discarded = n, "a database connection came back inside a transaction; closed, not reused");
    }
    !in_transaction
}

/// The stable text of a moderation state in the database.
pub fn moderation_from_db(text: &str) -> Moderation {
    Moderation::parse(text).unwrap_or(Moderation::Pending)
}

/// The stable text of a moderation policy in the database.
pub fn policy_to_db(policy: ModerationPolicy) -> &'static str {
    match policy {
        ModerationPolicy::Required => "required",
        ModerationPolicy::None => "none",
    }
}

/// Parses a moderation policy from the database.
pub fn policy_from_db(text: &str) -> ModerationPolicy {
    if text == "none" { ModerationPolicy::None } else { ModerationPolicy::Required }
}

/// The stable text of a dedup scope in the database.
pub fn dedup_from_db(text: &str) -> Dedup {
    match text {
        "event" => Dedup::Event,
        "guest" => Dedup::Guest,
        _ => Dedup::None,
    }
}
