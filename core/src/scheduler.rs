//! Many attempts at once: which attempt may use the network now, under a
//! concurrency limit, with status checks batched.
//!
//! Like the run loop of a sans-IO protocol core: feed inputs
//! ([`Scheduler::insert`], [`Scheduler::handle`], [`Scheduler::handle_status`],
//! [`Scheduler::set_online`] …), poll outputs ([`Scheduler::poll`] for network
//! commands, [`Scheduler::take_dirty`] for records to store), and sleep until
//! [`Scheduler::next_wakeup`] or the next input.
//!
//! Two rules make "exactly once" hold across reloads:
//! - **write-ahead**: an attempt issues no network command until its latest
//!   record revision has been durably stored (the caller reports it with
//!   [`Scheduler::mark_persisted`]), so the id a request carries is always
//!   the id a reload finds. Two kinds of change are stored without holding
//!   the attempt until they are, because a reload does without them: a
//!   part written into the ledger (the store's part list is the truth) and
//!   the content hash (the same bytes hash the same again);
//! - **successors are linked atomically**: an expired attempt's
//!   `replaced_by` and its successor become dirty together; the caller
//!   stores one `take_dirty()` batch in one transaction, so a crash never
//!   leaves a successor without its link or a link without its successor;
//! - **ownership**: only attempts this page owns (holds the Web Lock for)
//!   are driven; the rest are only shown.

use uuid::Uuid;

use crate::Entropy;
use crate::attempt::{Action, AttemptRecord, Confirmation, Env, Followup, ModerationView, NotKept, Step, Transfer};
use crate::multipart::{DEFAULT_PARALLELISM, PartAction, PartFailure, Pipeline};
use crate::retry::{Failure, RetryPolicy};
use crate::time::UnixMillis;
/// Files up to this size are hashed whole before authorize by default (each
/// is read into memory once for WebCrypto, which has no streaming digest);
/// never above the server's multipart threshold (32 MiB by default), where
/// files go up in parts, each hashed on its own.
pub const DEFAULT_HASH_LIMIT: u64 = 64 << 20;

use crate::wire::{
    AttemptResponse, AttemptStatus, AuthorizeRequest, ConfirmRequest, MAX_STATUS_IDS, Media, PartsRequest,
    PartsResponse, StatusResponse, StoredPart, UploadInstruction,
};

/// A network request the caller must perform, then report back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Authorize (create-or-return) an attempt.
    Authorize {
        /// Attempt id.
        id: Uuid,
        /// Body.
        request: AuthorizeRequest,
    },
    /// PUT the attempt's bytes.
    Upload {
        /// Attempt id.
        id: Uuid,
        /// Signed URL and headers.
        instruction: UploadInstruction,
    },
    /// Get a fresh signed URL.
    Renew {
        /// Attempt id.
        id: Uuid,
    },
    /// Confirm (create-or-return the media record).
    Confirm {
        /// Attempt id.
        id: Uuid,
        /// Body.
        request: ConfirmRequest,
    },
    /// Ask what became of these attempts (≤ 500).
    Status {
        /// Attempt ids.
        ids: Vec<Uuid>,
    },
    /// Hash the whole file (SHA-256, hex) before its first authorize, so the
    /// server can find the same photo already stored: local work, not a
    /// request. Only files that go up in one PUT (at most the server's
    /// multipart threshold), one file at a time.
    HashFile {
        /// Attempt id.
        id: Uuid,
        /// The file's size.
        size: u64,
    },
    /// Hash bytes `[start, end)` of a multipart attempt's file (SHA-256,
    /// hex): local work, not a request.
    HashPart {
        /// Attempt id.
        id: Uuid,
        /// Part number.
        number: u32,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// Sign part URLs (`POST /v1/attempts/{id}/parts`).
    SignParts {
        /// Attempt id.
        id: Uuid,
        /// Body.
        request: PartsRequest,
    },
    /// PUT bytes `[start, end)` of the file as part `number`.
    UploadPart {
        /// Attempt id.
        id: Uuid,
        /// Part number.
        number: u32,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Signed URL and headers.
        instruction: UploadInstruction,
    },
}

impl Command {
    /// The attempt a request is about (`None` for a status check).
    pub fn id(&self) -> Option<Uuid> {
        match self {
            Command::Authorize { id, .. }
            | Command::Upload { id, .. }
            | Command::Renew { id }
            | Command::Confirm { id, .. }
            | Command::HashPart { id, .. }
            | Command::HashFile { id, .. }
            | Command::SignParts { id, .. }
            | Command::UploadPart { id, .. } => Some(*id),
            Command::Status { .. } => None,
        }
    }

    /// Whether it goes over the network (and takes one of the page's
    /// request slots). Hashing a part is local work.
    pub fn is_request(&self) -> bool {
        !matches!(self, Command::HashPart { .. } | Command::HashFile { .. })
    }
}

/// The result of a [`Command`] other than `Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Result of `Authorize`.
    Authorize(Result<AttemptResponse, Failure>),
    /// Result of `Upload`.
    Upload(Result<(), Failure>),
    /// Result of `Renew`.
    Renew(Result<AttemptResponse, Failure>),
    /// Result of `Confirm`.
    Confirm(Result<Media, Failure>),
    /// Result of `HashPart`: the part's SHA-256, or why its bytes could not
    /// be read.
    PartHashed {
        /// Part number.
        number: u32,
        /// The hash.
        result: Result<String, Failure>,
    },
    /// Result of `HashFile`: the file's SHA-256, or why it could not be
    /// computed (the attempt then goes on without one).
    FileHashed(Result<String, Failure>),
    /// Result of `SignParts`.
    PartsSigned(Result<PartsResponse, Failure>),
    /// Result of `UploadPart`.
    PartSent {
        /// Part number.
        number: u32,
        /// Stored, or why not.
        result: Result<(), Failure>,
    },
}

impl Outcome {
    /// The outcome of `command` when it failed (`None` for a status check,
    /// whose answer is not an `Outcome`).
    pub fn failed(command: &Command, failure: Failure) -> Option<Outcome> {
        match command {
            Command::Authorize { .. } => Some(Outcome::Authorize(Err(failure))),
            Command::Upload { .. } => Some(Outcome::Upload(Err(failure))),
            Command::Renew { .. } => Some(Outcome::Renew(Err(failure))),
            Command::Confirm { .. } => Some(Outcome::Confirm(Err(failure))),
            Command::HashPart { number, .. } => Some(Outcome::PartHashed { number: *number, result: Err(failure) }),
            Command::HashFile { .. } => Some(Outcome::FileHashed(Err(failure))),
            Command::SignParts { .. } => Some(Outcome::PartsSigned(Err(failure))),
            Command::UploadPart { number, .. } => Some(Outcome::PartSent { number: *number, result: Err(failure) }),
            Command::Status { .. } => None,
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    record: AttemptRecord,
    has_blob: bool,
    owned: bool,
    persisted_revision: u64,
    /// The revision of its last change that must be stored before it acts
    /// (write-ahead); later changes that need not be (its content hash,
    /// its part ledger) are stored too, but nothing waits for them.
    strict_revision: u64,
    busy: bool,
    /// Busy with a command of its own (not a status batch): holds a slot.
    busy_alone: bool,
    /// Which slot that command holds.
    slot: Slot,
    dirty: bool,
    /// To be asked about by the next status batch (a refresh).
    refresh_due: bool,
    /// Its whole-file hash is being computed (memory only).
    hashing: bool,
    /// Its whole-file hash could not be computed: it goes without.
    hash_failed: bool,
    /// The parts of a multipart attempt on their way (memory only).
    pipeline: Pipeline,
}

impl Entry {
    /// Queues this record to be stored (once, in `dirty`), and holds it until
    /// it is: see [`Scheduler::mark_dirty`].
    fn mark_dirty(&mut self, dirty: &mut Vec<Uuid>) {
        self.strict_revision = self.strict_revision.max(self.record.revision);
        self.mark_dirty_lazily(dirty);
    }

    /// Queues this record to be stored without holding it: see
    /// [`Scheduler::mark_dirty_lazily`].
    fn mark_dirty_lazily(&mut self, dirty: &mut Vec<Uuid>) {
        if !self.dirty {
            self.dirty = true;
            dirty.push(self.record.id);
        }
    }

    /// Every change is stored.
    fn persisted(&self) -> bool {
        self.persisted_revision >= self.record.revision
    }

    /// Every change it must not act before is stored (write-ahead).
    fn may_act(&self, hold_all: bool) -> bool {
        let required = if hold_all { self.record.revision } else { self.strict_revision };
        self.persisted_revision >= required
    }

    /// Hashed, and waiting only for a free slot to send the authorize that
    /// carries its hash (not paused, not in a backoff).
    fn is_hashed_and_waiting(&self) -> bool {
        self.owned
            && !self.busy
            && !self.record.paused
            && self.record.next_retry_at.is_none()
            && self.record.sha256.is_some()
            && self.record.object_key.is_none()
            && self.record.step == crate::attempt::Step::Authorize
            && !self.record.is_terminal()
    }

    /// Authorized, and waiting only for a transfer slot to send its bytes
    /// in one PUT (not paused, not in a backoff).
    fn is_authorized_and_waiting(&self) -> bool {
        self.owned
            && !self.is_busy()
            && !self.record.paused
            && self.record.next_retry_at.is_none()
            && self.record.step == Step::Upload
            && self.has_blob
            && !self.record.is_terminal()
    }

    /// Busy with anything: a command of its own, a status batch, or parts.
    fn is_busy(&self) -> bool {
        self.busy || self.pipeline.is_busy()
    }

    /// Asked about by a refresh (and a restore): a confirmed attempt whose
    /// moderation may move, and a failed one the server may have finished
    /// anyway.
    fn wants_refresh(&self) -> bool {
        let moderation_open = self.record.confirmation == Confirmation::Confirmed
            && matches!(self.record.moderation, ModerationView::Pending | ModerationView::Unknown);
        let unsettled = self.record.has_failed() && self.record.object_key.is_some();
        moderation_open || unsettled
    }
}

/// The attempts, in the order the guest added them (`created_at`, then
/// id). A sorted vector: small in code and memory, and every scan the
/// scheduler makes walks it in order anyway. Beside it, the ids sorted with
/// each one's `created_at`, so a lookup by id is two binary searches, not a
/// scan: the page asks about attempts by id in loops over every attempt, and
/// a scan made those quadratic (a restore of 1,000 attempts spent most of
/// its time finding entries).
#[derive(Debug, Default)]
struct Entries(Vec<Entry>, Vec<(Uuid, UnixMillis)>);

impl Entries {
    fn key(e: &Entry) -> (UnixMillis, Uuid) {
        (e.record.created_at, e.record.id)
    }

    fn position(&self, id: &Uuid) -> Option<usize> {
        let at = self.1.binary_search_by(|(k, _)| k.cmp(id)).ok()?;
        let key = (self.1[at].1, *id);
        self.0.binary_search_by(|e| Self::key(e).cmp(&key)).ok()
    }

    fn get(&self, id: &Uuid) -> Option<&Entry> {
        self.position(id).map(|i| &self.0[i])
    }

    fn get_mut(&mut self, id: &Uuid) -> Option<&mut Entry> {
        self.position(id).map(|i| &mut self.0[i])
    }

    /// Inserts or replaces; returns the replaced entry.
    fn insert(&mut self, entry: Entry) -> Option<Entry> {
        let old = self.remove(&entry.record.id);
        let (created_at, id) = Self::key(&entry);
        let at = self.0.partition_point(|e| Self::key(e) < (created_at, id));
        self.0.insert(at, entry);
        let at = self.1.partition_point(|(k, _)| *k < id);
        self.1.insert(at, (id, created_at));
        old
    }

    fn remove(&mut self, id: &Uuid) -> Option<Entry> {
        let i = self.position(id)?;
        if let Ok(at) = self.1.binary_search_by(|(k, _)| k.cmp(id)) {
            self.1.remove(at);
        }
        Some(self.0.remove(i))
    }

    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.0.iter()
    }

    /// Every entry, to change; never its id or `created_at` (the order).
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.0.iter_mut()
    }
}

/// Where an attempt stands in this page, beside its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standing {
    /// This page drives it.
    pub owned: bool,
    /// Its latest record is stored (as far as the write-ahead requires).
    pub persisted: bool,
}

/// Which of the page's slots a command of an attempt's own holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Slot {
    /// One of the `concurrency` request slots (transfers, and authorizes
    /// while one is free).
    #[default]
    Request,
    /// One of as many confirm slots, beside the transfers.
    Confirm,
    /// An authorize sent while every request slot is taken, so that its
    /// answer is in before a transfer slot frees: one per transfer on the
    /// wire, counted with the files being authorized and those authorized
    /// and waiting for a transfer slot.
    AuthorizeAhead,
}

/// Drives many attempts.
#[derive(Debug)]
pub struct Scheduler {
    entries: Entries,
    policy: RetryPolicy,
    concurrency: usize,
    /// Confirms in flight: they go beside the transfers, as many as those.
    confirms_active: usize,
    /// Authorizes sent ahead, while every request slot was taken.
    authorizes_ahead: usize,
    /// Every change holds its attempt until stored (the page's storage is
    /// failing: nothing acts on a state that is not on disk).
    hold_all: bool,
    /// Parts of one multipart file sent at once.
    part_parallelism: usize,
    /// A hand-over to a Background Fetch is being prepared: every file is
    /// hashed and authorized, beyond the concurrency limit, and no new
    /// transfer starts ([`Scheduler::prepare_hand_over`]).
    preparing_hand_over: bool,
    /// Files up to this size are hashed whole before authorize (the
    /// server's multipart threshold).
    hash_limit: u64,
    online: bool,
    active: usize,
    dirty: Vec<Uuid>,
}

impl Scheduler {
    /// A scheduler running at most `concurrency` requests at once, and as
    /// many confirms beside them.
    pub fn new(policy: RetryPolicy, concurrency: usize) -> Self {
        Scheduler {
            entries: Entries::default(),
            policy,
            concurrency: concurrency.max(1),
            confirms_active: 0,
            authorizes_ahead: 0,
            hold_all: false,
            part_parallelism: DEFAULT_PARALLELISM,
            preparing_hand_over: false,
            hash_limit: DEFAULT_HASH_LIMIT,
            online: true,
            active: 0,
            dirty: Vec::new(),
        }
    }

    /// While `hold`, every change of an attempt holds it until stored, the
    /// ones otherwise stored without holding it too (the page's storage is
    /// failing: docs/protocol.md §5.1).
    pub fn set_hold_all(&mut self, hold: bool) {
        self.hold_all = hold;
    }

    /// While `preparing`, the files not sent yet are hashed and authorized
    /// all at once, beyond the concurrency limit (small requests), and no
    /// new transfer starts: their bytes are about to go by a Background
    /// Fetch, which needs each signed URL.
    pub fn prepare_hand_over(&mut self, preparing: bool) {
        self.preparing_hand_over = preparing;
    }

    /// Whether a hand-over is being prepared.
    pub fn is_preparing_hand_over(&self) -> bool {
        self.preparing_hand_over
    }

    /// Whether a hand-over being prepared still waits for an attempt's
    /// signed URL (one this page drives, not paused, whose hash or
    /// authorize has not answered and is not in a backoff).
    pub fn hand_over_waits(&self) -> bool {
        self.entries.iter().any(|e| {
            let r = &e.record;
            e.owned && !r.is_terminal() && !r.paused && r.step == Step::Authorize && r.next_retry_at.is_none()
        })
    }

    /// The largest file hashed whole before its authorize: see
    /// [`Scheduler::set_hash_limit`].
    pub fn hash_limit(&self) -> u64 {
        self.hash_limit
    }

    /// Files up to `bytes` are hashed whole before authorize (the server's
    /// multipart threshold: larger ones go up in parts, each hashed).
    pub fn set_hash_limit(&mut self, bytes: u64) {
        self.hash_limit = bytes;
    }

    /// Sends at most `parallelism` parts of one multipart file at once
    /// (within the overall concurrency; default 3).
    pub fn set_part_parallelism(&mut self, parallelism: usize) {
        self.part_parallelism = parallelism.max(1);
    }

    // ----- getters -------------------------------------------------------

    /// One attempt's record.
    pub fn record(&self, id: &Uuid) -> Option<&AttemptRecord> {
        self.entries.get(id).map(|e| &e.record)
    }

    /// All records, in the order they were added.
    pub fn records(&self) -> impl Iterator<Item = &AttemptRecord> {
        self.entries.iter().map(|e| &e.record)
    }

    /// Every record with whether this page drives it and whether it is
    /// persisted (as [`Scheduler::is_owned`] and [`Scheduler::is_persisted`]
    /// say), in one pass: for the page's checks over every attempt.
    pub fn records_with_standing(&self) -> impl Iterator<Item = (&AttemptRecord, Standing)> {
        self.entries.iter().map(|e| (&e.record, Standing { owned: e.owned, persisted: e.persisted() }))
    }

    /// Whether this page drives the attempt.
    pub fn is_owned(&self, id: &Uuid) -> bool {
        self.entries.get(id).is_some_and(|e| e.owned)
    }

    /// Whether a request for the attempt (or work on its parts) is in
    /// flight.
    pub fn is_busy(&self, id: &Uuid) -> bool {
        self.entries.get(id).is_some_and(Entry::is_busy)
    }

    /// Bytes of a multipart attempt's parts being sent right now.
    pub fn part_bytes_in_flight(&self, id: &Uuid) -> f64 {
        self.entries.get(id).map_or(0.0, |e| e.pipeline.bytes_in_flight())
    }

    /// Whether the attempt's bytes are available.
    pub fn has_blob(&self, id: &Uuid) -> bool {
        self.entries.get(id).is_some_and(|e| e.has_blob)
    }

    /// Requests in flight, but confirms (see [`Scheduler::confirms_active`]).
    pub fn active(&self) -> usize {
        self.active
    }

    /// Confirms in flight: they have slots of their own, as many as
    /// `concurrency`, beside the transfers.
    pub fn confirms_active(&self) -> usize {
        self.confirms_active
    }

    /// Authorizes in flight that were sent ahead, while every request slot
    /// was taken: with the other files being authorized and those
    /// authorized and waiting for a transfer slot, at most as many as the
    /// transfers on the wire.
    pub fn authorizes_ahead(&self) -> usize {
        self.authorizes_ahead
    }

    /// Whether the attempt's latest revision is stored.
    pub fn is_persisted(&self, id: &Uuid) -> bool {
        self.entries.get(id).is_some_and(Entry::persisted)
    }

    /// The revision of an attempt's record that must be stored before it
    /// may act (write-ahead): its latest, but for changes stored without
    /// holding it (a part in the ledger, the content hash).
    pub fn required_revision(&self, id: &Uuid) -> Option<u64> {
        self.entries.get(id).map(|e| e.strict_revision)
    }

    /// Whether every owned attempt is terminal or waits for the guest, and
    /// nothing is in flight.
    pub fn is_idle(&self) -> bool {
        self.active == 0
            && self.confirms_active == 0
            && self.authorizes_ahead == 0
            && !self.entries.iter().any(|e| e.refresh_due || e.hashing)
            && self.entries.iter().all(|e| {
                !e.owned
                        || e.record.is_terminal()
                        || e.record.needs_file() && !e.has_blob
                        // Paused by the guest: it waits for them.
                        || e.record.holds_back()
            })
    }

    // ----- inputs --------------------------------------------------------

    /// Adds or replaces an attempt. `persisted_revision` is the revision
    /// already in durable storage (0 for none).
    pub fn insert(&mut self, record: AttemptRecord, has_blob: bool, owned: bool, persisted_revision: u64) {
        let id = record.id;
        let (busy, busy_alone, dirty, refresh_due, pipeline) =
            self.entries.get(&id).map_or((false, false, false, false, Pipeline::default()), |e| {
                (e.busy, e.busy_alone, e.dirty, e.refresh_due, e.pipeline.clone())
            });
        let slot = self.entries.get(&id).map_or(Slot::Request, |e| e.slot);
        let (hashing, hash_failed) = self.entries.get(&id).map_or((false, false), |e| (e.hashing, e.hash_failed));
        let strict_revision = record.revision;
        let entry = Entry {
            record,
            has_blob,
            owned,
            persisted_revision,
            strict_revision,
            busy,
            busy_alone,
            slot,
            dirty,
            refresh_due,
            hashing,
            hash_failed,
            pipeline,
        };
        let needs_write = !entry.persisted();
        self.entries.insert(entry);
        if needs_write {
            self.mark_dirty(id);
        }
    }

    /// Forgets an attempt. A command of its own still in flight gives its
    /// slot back now; its answer will be ignored.
    pub fn remove(&mut self, id: &Uuid) -> Option<AttemptRecord> {
        let entry = self.entries.remove(id)?;
        if entry.busy_alone {
            self.release_slot(entry.slot);
        }
        self.active = self.active.saturating_sub(entry.pipeline.requests_in_flight());
        self.dirty.retain(|d| d != id);
        Some(entry.record)
    }

    /// The browser went online or offline.
    pub fn set_online(&mut self, online: bool) {
        self.online = online;
    }

    /// This page got (or lost) the right to drive the attempt.
    pub fn set_owned(&mut self, id: &Uuid, owned: bool) {
        if let Some(e) = self.entries.get_mut(id) {
            e.owned = owned;
        }
    }

    /// The attempt's bytes became available (or unavailable).
    pub fn set_has_blob(&mut self, id: &Uuid, has_blob: bool) {
        if let Some(e) = self.entries.get_mut(id) {
            e.has_blob = has_blob;
        }
    }

    /// The record at `revision` is durably stored.
    pub fn mark_persisted(&mut self, id: &Uuid, revision: u64) {
        if let Some(e) = self.entries.get_mut(id) {
            e.persisted_revision = e.persisted_revision.max(revision);
        }
    }

    /// Ask the server for fresh moderation states of confirmed attempts.
    pub fn request_refresh(&mut self) {
        for e in self.entries.iter_mut() {
            if e.wants_refresh() {
                e.refresh_due = true;
            }
        }
    }

    /// The guest session that authorized the attempt answered `token`: the
    /// attempt is asked about with it from now on. `hold`: the attempt acts
    /// only once that is stored (a token a reload would not find otherwise:
    /// not the page's own stored session).
    pub fn set_session_token(&mut self, id: &Uuid, token: &str, hold: bool, now: UnixMillis) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if e.record.set_session_token(token, now) {
            if hold {
                self.mark_dirty(*id);
            } else {
                self.mark_dirty_lazily(*id);
            }
        }
    }

    /// The guest picked the file again: attach it to the attempt.
    pub fn attach_file(&mut self, id: &Uuid, now: UnixMillis) -> bool {
        let Some(e) = self.entries.get_mut(id) else {
            return false;
        };
        e.has_blob = true;
        let changed = e.record.attach_file(now);
        if changed {
            self.mark_dirty(*id);
        }
        changed
    }

    /// The user cancelled the attempt. The caller aborts any request in
    /// flight; its result is ignored.
    pub fn cancel(&mut self, id: &Uuid, now: UnixMillis) -> bool {
        self.change(id, |r| r.cancel(now))
    }

    /// The guest paused the attempt's transfer. The caller aborts what is
    /// being sent; those answers are not failures. False when there is no
    /// transfer left to pause.
    pub fn pause(&mut self, id: &Uuid, now: UnixMillis) -> bool {
        self.change(id, |r| r.pause(now))
    }

    /// The guest resumed a paused transfer. False when it was not paused.
    pub fn resume(&mut self, id: &Uuid, now: UnixMillis) -> bool {
        self.change(id, |r| r.resume(now))
    }

    /// Hands the attempt's bytes to a Background Fetch
    /// ([`AttemptRecord::hand_over`]). The caller aborts what is being sent.
    pub fn hand_over(&mut self, id: &Uuid, now: UnixMillis) -> bool {
        self.change(id, |r| r.hand_over(now))
    }

    /// Takes the attempt back from a Background Fetch
    /// ([`AttemptRecord::take_back`]).
    pub fn take_back(&mut self, id: &Uuid, now: UnixMillis) -> bool {
        self.change(id, |r| r.take_back(now))
    }

    /// Applies one of the guest's actions to the attempt's record and
    /// answers what it answered; a record it changed (a new revision) is
    /// stored.
    fn change(&mut self, id: &Uuid, change: impl FnOnce(&mut AttemptRecord) -> bool) -> bool {
        let Some(e) = self.entries.get_mut(id) else {
            return false;
        };
        let revision = e.record.revision;
        let answer = change(&mut e.record);
        if e.record.revision != revision {
            self.mark_dirty(*id);
        }
        answer
    }

    /// The user asked to retry a failed attempt. Does nothing for an active
    /// one (a double click retries once).
    pub fn retry(&mut self, id: &Uuid, now: UnixMillis) -> bool {
        let Some(e) = self.entries.get_mut(id) else {
            return false;
        };
        if e.is_busy() {
            return false;
        }
        let changed = e.record.retry(now);
        if changed {
            self.mark_dirty(*id);
        }
        changed
    }

    /// Why the file under `blob_key` is not kept for a reload, on every
    /// record that shares it (stored with them, lazily: the reason only
    /// explains, it decides nothing).
    pub fn set_not_kept(&mut self, blob_key: &Uuid, why: Option<NotKept>) {
        let ids: Vec<Uuid> = self.records().filter(|r| r.blob_key == *blob_key).map(|r| r.id).collect();
        for id in ids {
            if self.entries.get_mut(&id).is_some_and(|e| e.record.set_not_kept(why)) {
                self.mark_dirty_lazily(id);
            }
        }
    }

    /// The store's own list of an attempt's parts, learnt outside a status
    /// check (before a file picked again is checked against them): the
    /// ledger takes it, nothing else changes.
    pub fn reconcile_parts(&mut self, id: &Uuid, parts: &[StoredPart]) {
        // Only a record this page drives is written from here.
        let Some(e) = self.entries.get_mut(id).filter(|e| e.owned) else {
            return;
        };
        let size = e.record.file.size;
        let Some(ledger) = e.record.multipart.as_mut() else {
            return;
        };
        let before = ledger.done.clone();
        ledger.reconcile(parts, size);
        if ledger.done != before {
            e.record.revision += 1;
            self.mark_dirty_lazily(*id);
        }
    }

    /// Marks a record as needing to be stored (again, when a write
    /// failed): it acts only once its revision of now is stored.
    pub fn mark_dirty(&mut self, id: Uuid) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.mark_dirty(&mut self.dirty);
        }
    }

    /// Marks a record as needing to be stored, without holding it until it
    /// is: for changes a reload can do without, because the server, not
    /// the record, has the last word on them (a part the ledger lost is in
    /// the store's part list) or the bytes give them again (the content
    /// hash).
    fn mark_dirty_lazily(&mut self, id: Uuid) {
        if let Some(e) = self.entries.get_mut(&id) {
            e.mark_dirty_lazily(&mut self.dirty);
        }
    }

    fn env<'a>(
        policy: &'a RetryPolicy,
        online: bool,
        has_blob: bool,
        now: UnixMillis,
        entropy: &mut dyn Entropy,
    ) -> Env<'a> {
        Env { now, jitter: entropy.unit(), policy, has_blob, online }
    }

    fn apply_followup(&mut self, id: Uuid, followup: Followup, now: UnixMillis, entropy: &mut dyn Entropy) {
        if followup != Followup::Successor {
            return;
        }
        let Some(e) = self.entries.get_mut(&id) else {
            return;
        };
        if e.record.replaced_by.is_some() {
            return;
        }
        let next_id = crate::new_attempt_id(entropy);
        e.record.replaced_by = Some(next_id);
        let successor = e.record.successor(next_id, now);
        let (has_blob, owned) = (e.has_blob, e.owned);
        self.insert(successor, has_blob, owned, 0);
    }

    /// The result of a command for attempt `id`.
    pub fn handle(&mut self, id: &Uuid, outcome: Outcome, now: UnixMillis, entropy: &mut dyn Entropy) {
        if matches!(outcome, Outcome::PartHashed { .. } | Outcome::PartsSigned(_) | Outcome::PartSent { .. }) {
            return self.handle_part(id, outcome, now, entropy);
        }
        if let Outcome::FileHashed(result) = outcome {
            let Some(e) = self.entries.get_mut(id) else {
                return;
            };
            e.hashing = false;
            match result {
                // Stored with the record, but the authorize that carries it
                // need not wait for that write: after a reload, a record
                // without it hashes the same bytes again, and the same
                // request finds the same attempt (create-or-return).
                Ok(sha256) => {
                    if e.record.set_content_hash(sha256, now) {
                        self.mark_dirty_lazily(*id);
                    }
                }
                // No WebCrypto, or the bytes could not be read: the upload
                // goes on without a content identity (if the bytes are gone,
                // the PUT finds out and the attempt waits for the file).
                Err(Failure::FileUnreadable) => {
                    e.record.file_unreadable(now);
                    self.mark_dirty(*id);
                }
                Err(_) => e.hash_failed = true,
            }
            return;
        }
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if e.busy_alone {
            e.busy = false;
            e.busy_alone = false;
            let slot = std::mem::take(&mut e.slot);
            self.release_slot(slot);
        }
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if e.record.is_terminal() {
            // Cancelled while in flight. A confirm that committed anyway is
            // the truth: the media exists, so the attempt is confirmed.
            if let Outcome::Confirm(Ok(media)) = outcome {
                let env = Self::env(&self.policy, self.online, e.has_blob, now, entropy);
                let revision = e.record.revision;
                e.record.adopt_confirmation(media, &env);
                if e.record.revision != revision {
                    self.mark_dirty(*id);
                }
            }
            return;
        }
        if e.record.paused {
            if let Outcome::Upload(Err(_)) = outcome {
                // Aborted by the guest's pause (or failed meanwhile): sent
                // again on resume.
                e.record.upload_interrupted();
                return;
            }
        }
        let env = Self::env(&self.policy, self.online, e.has_blob, now, entropy);
        let revision = e.record.revision;
        let succeeded = matches!(&outcome, Outcome::Authorize(Ok(_)) | Outcome::Renew(Ok(_)) | Outcome::Upload(Ok(_)));
        let followup = match outcome {
            Outcome::Authorize(r) => e.record.handle_authorize(r, &env),
            Outcome::Upload(r) => e.record.handle_upload(r, &env),
            Outcome::Renew(r) => e.record.handle_renew(r, &env),
            Outcome::Confirm(r) => e.record.handle_confirm(r, &env),
            Outcome::PartHashed { .. }
            | Outcome::PartsSigned(_)
            | Outcome::PartSent { .. }
            | Outcome::FileHashed(_) => Followup::None,
        };
        if e.record.revision != revision {
            if succeeded && !e.record.is_terminal() && e.record.multipart.is_none() {
                // An answer the server keeps the last word on: the PUT after
                // an authorize or a renew, and the confirm after a PUT, need
                // not wait for it to be written (docs/protocol.md §5.1). A
                // reload that loses it authorizes again under the same id
                // (create-or-return: the same attempt, a fresh URL) or asks
                // the server, whose status says whether the object is stored.
                // Not a plan of parts: a reload without it would learn the
                // plan again from a renew, and send parts the store holds.
                self.mark_dirty_lazily(*id);
            } else {
                self.mark_dirty(*id);
            }
        }
        self.apply_followup(*id, followup, now, entropy);
    }

    /// The result of a part command of a multipart attempt.
    fn handle_part(&mut self, id: &Uuid, outcome: Outcome, now: UnixMillis, entropy: &mut dyn Entropy) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if matches!(outcome, Outcome::PartsSigned(_) | Outcome::PartSent { .. }) {
            self.active = self.active.saturating_sub(1);
        }
        let jitter = entropy.unit();
        let policy = self.policy;
        let retries = e.record.retries;
        let revision = e.record.revision;
        // A finished (cancelled) attempt's late answers only settle the
        // pipeline's books.
        let terminal = e.record.is_terminal();
        // The revision after a part was written into the ledger.
        let mut ledger_revision = None;
        let (failure, error) = match outcome {
            Outcome::PartHashed { number, result } => {
                let error = result.as_ref().err().cloned();
                (e.pipeline.handle_hashed(number, result), error)
            }
            Outcome::PartsSigned(result) => {
                let error = result.as_ref().err().cloned();
                (e.pipeline.handle_signed(result, &policy, retries, jitter, now), error)
            }
            Outcome::PartSent { number, result } => {
                let error = result.as_ref().err().cloned();
                match e.pipeline.handle_sent(number, result, &policy, retries, jitter, now) {
                    Ok(Some(sha256)) if !terminal => {
                        e.record.part_stored(number, sha256_or_none(sha256), now);
                        ledger_revision = Some(e.record.revision);
                        (None, None)
                    }
                    Ok(_) => (None, None),
                    Err(failure) => (Some(failure), error),
                }
            }
            _ => (None, None),
        };
        if terminal {
            return;
        }
        if e.record.paused && matches!(failure, Some(PartFailure::Retry { .. } | PartFailure::Check)) {
            // A part cut by the guest's pause: not a failure. What is on the
            // wire finishes, then the server's list says which parts it holds.
            e.pipeline.stop();
            e.record.part_interrupted(now);
        } else if let Some(failure) = failure {
            if failure == PartFailure::FileGone {
                e.has_blob = false;
            }
            let env = Self::env(&self.policy, self.online, e.has_blob, now, &mut FixedJitter(jitter));
            e.record.part_failed(failure, error.as_ref(), &env);
        }
        if e.record.revision == revision {
            return;
        }
        if ledger_revision == Some(e.record.revision) && e.record.transfer != Transfer::Uploaded {
            // Only the ledger changed (not its last part: the confirm that
            // follows waits for the write): the next parts need not wait
            // for it to be written (a reload asks the store which parts it
            // holds, and the store wins).
            self.mark_dirty_lazily(*id);
        } else {
            self.mark_dirty(*id);
        }
    }

    /// The bytes of part `number` could not be read when it was to be sent:
    /// the attempt waits for its file.
    pub fn part_unreadable(&mut self, id: &Uuid, number: u32, now: UnixMillis, entropy: &mut dyn Entropy) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if e.pipeline.handle_unreadable(number) {
            self.active = self.active.saturating_sub(1);
        }
        e.has_blob = false;
        if e.record.is_terminal() {
            return;
        }
        let revision = e.record.revision;
        let env = Self::env(&self.policy, self.online, false, now, entropy);
        e.record.part_failed(PartFailure::FileGone, None, &env);
        if e.record.revision != revision {
            self.mark_dirty(*id);
        }
    }

    /// Upload progress of part `number` of a multipart attempt.
    pub fn part_progress(&mut self, id: &Uuid, number: u32, sent: f64) {
        if let Some(e) = self.entries.get_mut(id) {
            e.pipeline.progress(number, sent);
        }
    }

    /// The result of a `Status` command for `ids`.
    pub fn handle_status(
        &mut self,
        ids: &[Uuid],
        result: Result<StatusResponse, Failure>,
        now: UnixMillis,
        entropy: &mut dyn Entropy,
    ) {
        self.active = self.active.saturating_sub(1);
        let mut answers: Vec<AttemptStatus> = match &result {
            Ok(response) => response.results.clone(),
            Err(_) => Vec::new(),
        };
        for id in ids {
            let Some(e) = self.entries.get_mut(id) else {
                continue;
            };
            e.busy = false;
            let item = match &result {
                Err(failure) => Err(failure.clone()),
                Ok(_) => match answers.iter().position(|s| s.id() == *id) {
                    Some(i) => Ok(answers.swap_remove(i)),
                    None => Err(Failure::Unexpected("the status answer left out an attempt".to_owned())),
                },
            };
            let env = Self::env(&self.policy, self.online, e.has_blob, now, entropy);
            let revision = e.record.revision;
            let followup = e.record.handle_status(item, &env);
            if e.record.revision != revision {
                self.mark_dirty(*id);
            }
            self.apply_followup(*id, followup, now, entropy);
        }
    }

    // ----- outputs -------------------------------------------------------

    /// Whether some record waits to be stored (then the caller stores it and
    /// polls again before it sleeps: the attempt may act right after).
    pub fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Records whose latest revision must be stored, in change order.
    pub fn take_dirty(&mut self) -> Vec<Uuid> {
        let ids = std::mem::take(&mut self.dirty);
        for id in &ids {
            if let Some(e) = self.entries.get_mut(id) {
                e.dirty = false;
            }
        }
        ids
    }

    /// The next network command, if one may start now. `None` means none
    /// may until something comes in: a scan that changed a record on its
    /// way (an expired URL now asks for a renewal, a file is attached
    /// again) is made once more, since the counts it started from (the
    /// files authorized and waiting) may have moved.
    pub fn poll(&mut self, now: UnixMillis) -> Option<Command> {
        let mut changed = false;
        let command = self.poll_once(now, &mut changed);
        if command.is_some() || !changed {
            return command;
        }
        self.poll_once(now, &mut changed)
    }

    fn poll_once(&mut self, now: UnixMillis, changed: &mut bool) -> Option<Command> {
        let hold_all = self.hold_all;
        if !self.online {
            return None;
        }
        let network = self.active < self.concurrency;
        if network {
            if let Some(ids) = self.poll_status(now) {
                self.active += 1;
                return Some(Command::Status { ids });
            }
        }
        // Whole files are hashed while others are on the wire, as many at
        // once as may be sent at once (the browser hashes off the main
        // thread), as long as the bytes in memory for them stay within
        // `hash_limit` (one file of any size may always be hashed). Only
        // just ahead of the sends: the files hashed and waiting for their
        // authorize, with those being hashed, are at most as many as may be
        // sent at once. Hashing a whole pick at once held the first files'
        // authorizes and PUTs back on a phone's CPU (issue 34: the first
        // byte of 30 photos 1.1 s after the pick, against 0.2 s bare).
        //
        // The next files are authorized while the current ones are sent, so
        // a file's PUT starts the moment a transfer slot frees instead of a
        // round trip later (issue 34): an authorize may go while every
        // request slot is taken, as long as the files being authorized and
        // those authorized and waiting for a transfer slot are fewer than
        // the transfers on the wire (each of which will free one).
        //
        // All of these counts in one pass over the attempts.
        let (mut hashing_files, mut hashing_bytes, mut hashed_waiting) = (0usize, 0u64, 0usize);
        let (mut transfers, mut getting_ready) = (0usize, 0usize);
        for e in self.entries.iter() {
            if e.hashing {
                hashing_files += 1;
                hashing_bytes += e.record.file.size;
            }
            hashed_waiting += usize::from(e.is_hashed_and_waiting());
            let alone = e.busy_alone && e.slot != Slot::Confirm;
            transfers += usize::from(alone && e.record.step == Step::Upload) + e.pipeline.requests_in_flight();
            getting_ready += usize::from(alone && e.record.step == Step::Authorize || e.is_authorized_and_waiting());
        }
        let ahead_slot = getting_ready < transfers.min(self.concurrency);
        let preparing = self.preparing_hand_over;
        let hash_slots = if preparing { usize::MAX } else { self.concurrency.max(1).saturating_sub(hashed_waiting) };
        let hash_limit = self.hash_limit;
        // In order, by position: nothing below adds or removes an entry (a
        // lookup by id per entry made every poll quadratic in the attempts).
        for i in 0..self.entries.0.len() {
            let network = self.active < self.concurrency;
            // A sign request is small and short: it may go beside a full set
            // of transfers (one more request than `concurrency`), so the
            // next parts are signed before a slot frees.
            let sign = self.active < self.concurrency + 1;
            // So is a confirm: it goes beside the transfers, in slots of its
            // own, so a file's confirm does not hold the next file's PUT
            // back for a round trip (issue 34; Uppy's limit is on uploads
            // alone too).
            let confirm_slot = self.confirms_active < self.concurrency;
            let parallelism = self.part_parallelism;
            let e = &mut self.entries.0[i];
            let id = e.record.id;
            if !e.owned || e.busy || e.hashing || !e.may_act(hold_all) || e.record.is_terminal() {
                continue;
            }
            let revision = e.record.revision;
            let action = e.record.poll_action(now, e.has_blob);
            if e.record.revision != revision {
                // Write-ahead: the changed record is stored before it acts.
                e.mark_dirty(&mut self.dirty);
                *changed = true;
                continue;
            }
            if action == Action::Parts {
                let ledger = e.record.multipart.as_ref().expect("a multipart attempt has its ledger");
                let Some(part) = e.pipeline.poll(ledger, e.record.file.size, parallelism, (network, sign), now) else {
                    continue;
                };
                let command = match part {
                    PartAction::Hash { number, start, end } => Command::HashPart { id, number, start, end },
                    PartAction::Sign(parts) => Command::SignParts { id, request: PartsRequest { parts } },
                    PartAction::Send { number, start, end, upload } => {
                        e.record.transfer = Transfer::Uploading;
                        Command::UploadPart { id, number, start, end, instruction: upload }
                    }
                };
                if command.is_request() {
                    self.active += 1;
                }
                return Some(command);
            }
            if let Action::Authorize(request) = &action {
                // The content identity first: the file's SHA-256 goes with the
                // first authorize (then the server finds the same photo
                // already stored, and binds the PUT to these bytes).
                let wants_hash = request.sha256.is_none()
                    && e.has_blob
                    && !e.hash_failed
                    && e.record.object_key.is_none()
                    && request.size <= hash_limit;
                if wants_hash {
                    if hashing_files >= hash_slots || (hashing_files > 0 && hashing_bytes + request.size > hash_limit) {
                        continue;
                    }
                    e.hashing = true;
                    return Some(Command::HashFile { id, size: request.size });
                }
            }
            let authorizing = matches!(action, Action::Authorize(_));
            if preparing && matches!(action, Action::Upload(_)) {
                continue;
            }
            let slot = match action {
                Action::Confirm(_) => confirm_slot.then_some(Slot::Confirm),
                _ if network || (preparing && authorizing) => Some(Slot::Request),
                Action::Authorize(_) if ahead_slot => Some(Slot::AuthorizeAhead),
                _ => None,
            };
            let Some(slot) = slot else { continue };
            if e.pipeline.is_busy() {
                // A multipart attempt checks with the server only once its
                // parts on the wire have answered.
                continue;
            }
            e.record.begin(&action);
            let command = match action {
                Action::Authorize(request) => Command::Authorize { id, request },
                Action::Upload(instruction) => Command::Upload { id, instruction },
                Action::Renew => Command::Renew { id },
                Action::Confirm(request) => Command::Confirm { id, request },
                Action::Parts | Action::Check | Action::Wait(_) | Action::Idle => continue,
            };
            e.busy = true;
            e.busy_alone = true;
            e.slot = slot;
            match slot {
                Slot::Request => self.active += 1,
                Slot::Confirm => self.confirms_active += 1,
                Slot::AuthorizeAhead => self.authorizes_ahead += 1,
            }
            return Some(command);
        }
        None
    }

    /// Gives back the slot of a command of an attempt's own.
    fn release_slot(&mut self, slot: Slot) {
        let count = match slot {
            Slot::Request => &mut self.active,
            Slot::Confirm => &mut self.confirms_active,
            Slot::AuthorizeAhead => &mut self.authorizes_ahead,
        };
        *count = count.saturating_sub(1);
    }

    fn poll_status(&mut self, now: UnixMillis) -> Option<Vec<Uuid>> {
        let hold_all = self.hold_all;
        // One batch asks about attempts of one session (the token goes with
        // the request): the first due attempt's.
        let mut ids = Vec::new();
        let mut token: Option<Option<&str>> = None;
        for e in self.entries.iter() {
            if ids.len() == MAX_STATUS_IDS {
                break;
            }
            let id = &e.record.id;
            if e.is_busy() || !e.may_act(hold_all) {
                continue;
            }
            let due = e.record.next_retry_at.is_none_or(|t| t <= now);
            let check = e.owned && !e.record.is_terminal() && e.record.step == crate::attempt::Step::Check && due;
            if !check && !e.refresh_due {
                continue;
            }
            let this = e.record.session_token.as_deref();
            if *token.get_or_insert(this) == this {
                ids.push(*id);
            }
        }
        if ids.is_empty() {
            return None;
        }
        for id in &ids {
            let e = self.entries.get_mut(id).expect("present");
            e.busy = true;
            e.refresh_due = false;
        }
        Some(ids)
    }

    /// When a waiting attempt becomes due, if any.
    pub fn next_wakeup(&self) -> Option<UnixMillis> {
        let hold_all = self.hold_all;
        self.entries
            .iter()
            // An attempt whose latest record is not stored yet acts once it
            // is (write-ahead): that is an input, not a time.
            .filter(|e| e.owned && !e.busy && !e.record.is_terminal() && e.may_act(hold_all))
            // Waiting for the guest, not for a time.
            .filter(|e| !e.record.needs_file() || e.has_blob)
            .filter(|e| !e.record.holds_back())
            .filter_map(|e| {
                // A part's backoff matters only while the attempt sends parts.
                let parts = (e.record.step == crate::attempt::Step::Upload).then(|| e.pipeline.next_wakeup()).flatten();
                match (e.record.next_retry_at, parts) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            })
            .min()
    }
}

/// A part's hash as recorded (an empty one is none).
fn sha256_or_none(sha256: String) -> Option<String> {
    Some(sha256).filter(|s| !s.is_empty())
}

/// Hands a draw already made to code that takes an [`Entropy`].
struct FixedJitter(f64);

impl Entropy for FixedJitter {
    fn fill(&mut self, buf: &mut [u8]) {
        buf.fill(0);
    }

    fn unit(&mut self) -> f64 {
        self.0
    }
}
