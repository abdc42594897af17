//! One page's uploads, sans-IO: the [`Scheduler`] and everything a browser
//! page tracks beside it.
//!
//! - **Which page drives which attempt.** An attempt is driven by the one
//!   page that holds its Web Lock. The page asks for the lock
//!   ([`Effect::AskLock`]), hears whether it holds it or another page does
//!   ([`Input::Lock`]), and takes the attempt over from the stored record
//!   when another page lets go ([`Effect::Load`], [`Input::Loaded`]).
//! - **Restore.** After a reload every unfinished attempt asks for its lock;
//!   nothing is sent until every lock has an answer, so the status checks go
//!   out in full batches; the restore's [`Ticket`] is done then.
//! - **Successors.** An expired attempt whose bytes are held gets a linked
//!   successor (the scheduler mints it); once stored, it is driven only when
//!   its own lock is granted, like any new attempt.
//! - **Record writes** go out one batch at a time ([`Effect::Store`]); a
//!   failed write is tried again after 1 s, doubling to 30 s, and reported
//!   ([`Effect::StorageError`]) until a write works again. The attempts wait
//!   meanwhile (write-ahead).
//! - **Files.** Which files' bytes this page holds in memory, and which are
//!   kept in IndexedDB within the size caps ([`Effect::KeepFiles`]); the rule
//!   that spots a file picked twice ([`Page::add`]).
//! - **The guest session**: requests wait for it, one join at a time
//!   ([`Effect::Join`]); a session the server forgot is joined again.
//!
//! Events in, effects out, as in str0m's run loop: feed [`Input`]s with
//! [`Page::handle`] and call the user's actions ([`Page::add`],
//! [`Page::cancel`] …); carry out every [`Effect`] from
//! [`Page::poll_effect`]; then wait for the next input or
//! [`Page::poll_timeout`]. The native simulation in `core/tests/support`
//! drives this same type.

use std::collections::VecDeque;

use uuid::Uuid;

pub use crate::attempt::NotKept;
use crate::attempt::{AttemptRecord, Confirmation, FileInfo};
use crate::error::{Error, ErrorCode};
use crate::idmap::{IdMap, IdSet};
use crate::restrictions::{PickLimits, Restrictions, check_filename};
use crate::retry::{Disposition, Failure, Operation, RetryPolicy, classify};
use crate::scheduler::{Command, Outcome, Scheduler};
use crate::time::UnixMillis;
use crate::view::{AttemptView, PageFacts};
use crate::wire::{AttemptStatus, EventInfo, StatusResponse};
use crate::{Entropy, new_attempt_id};

/// The first wait before a failed write of attempt records is tried again.
const PERSIST_RETRY_FIRST_MS: i64 = 1000;
/// The longest such wait.
const PERSIST_RETRY_CAP_MS: i64 = 30_000;
/// Progress is reported at most this often per attempt.
const PROGRESS_INTERVAL_MS: i64 = 100;
/// Files kept in one transaction, once this page has kept one: at most
/// this many, and at most [`KEEP_BATCH_BYTES`] (one file of any size may
/// go alone).
const KEEP_BATCH: usize = 64;
/// Bytes kept in one transaction: a few photos at a time, so the attempts'
/// record writes are not queued behind a copy of a whole pick (issue 34: 29
/// photos of 4 MiB in one transaction held every record write of the page
/// for 0.4–0.5 s, with a CPU 4× slower).
const KEEP_BATCH_BYTES: u64 = 16 << 20;
/// How long a restore whose locks are settled waits for the records it took
/// over to be written back before it is done anyway (a write that never
/// ends must not hold `restore()` for ever; the attempts still act only
/// once written).
const RESTORE_WRITE_WAIT_MS: i64 = 1000;

/// How a page is set up.
#[derive(Clone, Debug)]
pub struct PageConfig {
    /// The event slug.
    pub event: String,
    /// Backoff and give-up limits.
    pub policy: RetryPolicy,
    /// Transfers at once across all files (and the authorizes they start
    /// with); while every slot is taken, the next files are authorized
    /// ahead, one per transfer on the wire, and confirms go beside them in
    /// as many slots of their own.
    pub concurrency: usize,
    /// The app's own restrictions (the event's come with the session).
    pub restrictions: Restrictions,
    /// The app's caps on one pick (one [`Page::add`]).
    pub pick_limits: PickLimits,
    /// Files up to this size are kept in IndexedDB for a reload.
    pub keep_file_max_bytes: u64,
    /// At most this many bytes of files are kept in total.
    pub keep_files_total_bytes: u64,
    /// A file that goes up in one PUT is hashed whole (SHA-256, its content
    /// identity) before its first authorize when it is at most this big (and
    /// at most the server's multipart threshold); 0: never.
    pub hash_file_max_bytes: u64,
}

/// A guest session: the token requests carry, and the event it joined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The bearer token.
    pub token: String,
    /// The event's public description and restrictions.
    pub event: EventInfo,
}

/// How far a write must have gone before it counts as done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Flushed to disk: a record never stored before must survive a power
    /// cut before its first request leaves.
    Strict,
    /// Handed to the browser: enough for later transitions, which a restore
    /// checks with the server anyway.
    Relaxed,
}

/// A user's action that finishes later: an `add` (its files kept) or a
/// `restore` (every lock answered). [`Effect::Done`] says when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket(pub u32);

/// Something the driver must do. Those with an answer are reported back as
/// the [`Input`] named in each.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Store these records in one transaction, then delete these ones;
    /// answer [`Input::Stored`]. At most one is in flight. It is one of: the
    /// records that changed; the new records of an add
    /// ([`Page::add`], strict, before anything of them is sent);
    /// or the record of an attempt being forgotten ([`Page::forget`]).
    Store {
        /// The records, at the revisions to store.
        records: Vec<AttemptRecord>,
        /// The attempts whose records to delete.
        delete: Vec<Uuid>,
        /// How far the write must go.
        durability: Durability,
    },
    /// Ask for the attempt's Web Lock; answer [`Input::Lock`] (held, or held
    /// by another page — then again when it is granted).
    AskLock(Uuid),
    /// Give the attempt's lock up (or withdraw the request).
    ReleaseLock(Uuid),
    /// Read the attempt's stored record (and, with `find_file`, whether that
    /// file is kept in IndexedDB); answer [`Input::Loaded`].
    Load {
        /// The attempt.
        id: Uuid,
        /// A file to look for among the kept ones.
        find_file: Option<Uuid>,
    },
    /// Keep these files (by blob key) in IndexedDB, in one transaction;
    /// answer [`Input::Kept`]. At most one batch is in flight.
    KeepFiles(Vec<Uuid>),
    /// Delete these kept files.
    DeleteKeptFiles(Vec<Uuid>),
    /// Let go of this file's bytes held in memory.
    DropFile(Uuid),
    /// Give the file held under this blob key to [`Page::add`] again, as if
    /// the guest picked it again (then let go of it, [`Effect::DropFile`]):
    /// it was given to an attempt after a check against the parts known
    /// then, and the server now lists one more. Its add checks it against
    /// every part the server lists before a byte is sent.
    Recheck(Uuid),
    /// Join the event (or take the session another page stored, unless it
    /// is `stale_token`); answer [`Input::Joined`].
    Join {
        /// A token the server no longer knows.
        stale_token: Option<String>,
    },
    /// Send a request with the session's token; answer [`Input::Outcome`]
    /// or, for a status check, [`Input::Status`]. Hashing a file or a part
    /// comes this way too, though it is no request (answered with
    /// [`Input::Outcome`]; its token is empty: it needs no session).
    Send {
        /// The request.
        command: Command,
        /// The session token to send it with (empty for hashing).
        token: String,
    },
    /// Abort the attempt's transfer, if one runs.
    Abort(Uuid),
    /// Tell the other pages the attempt's record changed.
    Announce(Uuid),
    /// Tell the app the attempt changed.
    Changed(Uuid),
    /// Tell the app the attempt was forgotten.
    Removed(Uuid),
    /// Saving attempt records fails (with why), or works again (`None`).
    StorageError(Option<Error>),
    /// The guest session was joined, or refused for good (a wrong guest
    /// code, no such event): see [`Page::session`] and
    /// [`Page::session_error`].
    SessionChanged,
    /// Files could not be kept for a reload (they still upload).
    FilesNotKept(Error),
    /// A ticket's action has finished.
    Done(Ticket),
    /// The page became busy (`true`: it drives an attempt that goes on
    /// without the guest) or stopped being busy ([`Page::is_busy`]).
    BusyChanged(bool),
}

/// Something that happened: the answer to an [`Effect`], or news from
/// outside. (Moved once, from the driver to the page: its size does not
/// matter.)
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Input {
    /// The last [`Effect::Store`] committed, or failed (nothing written).
    Stored(Result<(), Error>),
    /// The attempt's lock is held by this page (`true`) or by another.
    Lock {
        /// The attempt.
        id: Uuid,
        /// Whether this page holds it.
        granted: bool,
    },
    /// The stored record asked for by [`Effect::Load`].
    Loaded {
        /// The attempt.
        id: Uuid,
        /// The record (`None`: deleted, e.g. forgotten in another tab).
        record: Result<Option<AttemptRecord>, Error>,
        /// Whether the file asked for is kept in IndexedDB.
        file_found: bool,
    },
    /// Another page changed the attempt's record.
    RemoteChange(Uuid),
    /// The last [`Effect::KeepFiles`] batch was kept, or refused.
    Kept(Result<(), Error>),
    /// The session, or why there is none.
    Joined(Result<Session, Failure>),
    /// The answer to a request of one attempt.
    Outcome {
        /// The attempt.
        id: Uuid,
        /// The answer.
        outcome: Outcome,
        /// The token it was sent with.
        token: String,
    },
    /// The answer to a status check.
    Status {
        /// The attempts asked about.
        ids: Vec<Uuid>,
        /// The answer.
        result: Result<StatusResponse, Failure>,
        /// The token it was sent with.
        token: String,
    },
    /// The attempt's bytes are gone (the kept copy could not be read): its
    /// upload (of part `part`, for a multipart attempt) did not start.
    FileUnavailable {
        /// The attempt.
        id: Uuid,
        /// The part whose PUT did not start, for a multipart attempt.
        part: Option<u32>,
    },
    /// Upload progress of an attempt (of one of its parts, for a multipart
    /// attempt): bytes sent of the request's total.
    Progress {
        /// The attempt.
        id: Uuid,
        /// The part, for a multipart attempt.
        part: Option<u32>,
        /// Bytes sent.
        sent: f64,
        /// Bytes to send.
        total: f64,
    },
    /// The browser went online or offline.
    Online(bool),
}

/// What `add` did with one file.
#[derive(Clone, Debug, PartialEq)]
pub enum Added {
    /// A new attempt.
    New(Uuid),
    /// Picked again for an attempt that waited for it (or had failed: it is
    /// retried, same id).
    Reattached(Uuid),
    /// The same file already has a live or confirmed attempt.
    Duplicate(Uuid),
    /// A new attempt (`id`) for a file with the same name, size and time
    /// as the one attempt `waiting` waits for, but other bytes in a part
    /// its store holds: not the same file. `waiting` keeps waiting for its
    /// own file, untouched.
    NotSameFile {
        /// The new attempt.
        id: Uuid,
        /// The attempt that still waits for its own file.
        waiting: Uuid,
    },
    /// Refused before any network.
    Refused {
        /// The file's name.
        file_name: String,
        /// Why.
        error: Error,
    },
}

/// The bytes of one stored part of an attempt, to be hashed in a picked
/// file ([`Page::identity_checks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartRange {
    /// The part number.
    pub number: u32,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// The stored parts one picked file must match before it may be given to
/// an attempt that waits for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityCheck {
    /// The file, by index in the `add` call.
    pub index: usize,
    /// The parts to hash, by number.
    pub parts: Vec<PartRange>,
}

/// What [`Page::add`] decided. Its `new_records` are stored (strictly,
/// the page's first write after the add) before anything of them happens.
#[derive(Clone, Debug, PartialEq)]
pub struct AddPlan {
    /// One outcome per file, in the order given.
    pub outcomes: Vec<Added>,
    /// New attempts, to be stored before anything else happens to them.
    pub new_records: Vec<AttemptRecord>,
    /// Files (by index in the call) whose bytes the page now needs, under
    /// these blob keys.
    pub hold: Vec<(usize, Uuid)>,
    /// Blob keys of existing attempts whose files should now be kept.
    pub keep: Vec<Uuid>,
    /// The new attempts whose whole file the driver may start hashing now,
    /// while their records are written (the scheduler asks for those hashes
    /// first, once the records are stored: [`Command::HashFile`]): as many
    /// as it hashes at once, of those it hashes whole. The driver answers
    /// that command with the hash it started, so the first authorizes do
    /// not wait for the write and then the hash, one after the other
    /// (issue 34).
    pub hash_ahead: Vec<Uuid>,
}

/// The write under way ([`Effect::Store`]).
#[derive(Debug)]
enum Writing {
    /// Records that changed.
    Records(Vec<AttemptRecord>),
    /// The first of [`Page`]'s own writes, for the action of this ticket.
    Own(Ticket),
}

/// A guest's action that waits on a write of its own.
#[derive(Debug)]
enum OwnWrite {
    /// An add: its new records stored, strictly, before anything of them
    /// is sent.
    Add(AddPlan),
    /// A forget: the attempt's record deleted.
    Forget(Uuid),
    /// A hand-over: the attempts handed to a Background Fetch stored,
    /// strictly, before their locks are let go.
    HandOver(Vec<Uuid>),
}

/// Where an attempt's Web Lock stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockState {
    /// Asked for; no answer yet.
    Asking,
    /// Another page holds it (this page waits in line).
    Elsewhere,
    /// This page holds it.
    Held,
}

/// Of the room the browser's estimate leaves, this share stays free (the
/// records, other sites' data and the estimate's own imprecision).
const ROOM_KEPT_FREE: f64 = 0.1;

/// Files being kept in IndexedDB, one batch at a time.
#[derive(Debug, Default)]
struct Keeping {
    queue: Vec<(Uuid, u64)>,
    in_flight: Option<Vec<(Uuid, u64)>>,
    /// A file was kept in this page: several may share a transaction.
    proven: bool,
    /// Keeping failed in this page: not tried again.
    broken: bool,
    /// Adds waiting for their files to be kept.
    waiting: Vec<Ticket>,
}

/// One page's uploads. See the module documentation.
#[derive(Debug)]
pub struct Page {
    config: PageConfig,
    sched: Scheduler,
    locks: IdMap<LockState>,
    /// Attempts created (or retried) in this page: driven as soon as their
    /// lock is granted, without reading them back.
    fresh: IdSet,
    /// Attempts whose lock was just granted and whose record is being read.
    taking_over: IdSet,
    /// Attempts taken back from a Background Fetch once their lock is held
    /// ([`Page::take_back`]).
    taking_back: IdSet,
    /// Records a restore just read, waiting for their lock.
    restoring: IdMap<AttemptRecord>,
    /// Attempts another page changed, being read.
    remote_loads: IdSet,
    /// Restores waiting for every lock to answer.
    restores: Vec<Ticket>,
    /// When a restore stops waiting for its write-back (see
    /// [`RESTORE_WRITE_WAIT_MS`]).
    restore_writes_until: Option<UnixMillis>,
    /// Attempts given a file picked again, with the parts it was checked
    /// against: until the server's list is taken, a part it lists beyond
    /// these means the file must be picked (and checked) again.
    checked_parts: IdMap<Vec<u32>>,
    /// Files (by blob key) given back to the driver's add
    /// ([`Effect::Recheck`]) and not added yet: the page is not idle.
    rechecking: IdSet,
    /// Files held in memory, by blob key.
    held: IdSet,
    /// Files kept in IndexedDB, by blob key, with their sizes.
    kept: IdMap<u64>,
    keeping: Keeping,
    /// Bytes the browser says this site may still store, when it says.
    storage_room: Option<u64>,
    /// Bytes kept since that estimate.
    kept_since_estimate: u64,
    /// (sent, total, last reported) per uploading attempt.
    progress: IdMap<(f64, f64, i64)>,
    session: Option<Session>,
    /// Why the server refused the session for good, until a join works.
    session_error: Option<Error>,
    joining: bool,
    stale_token: Option<String>,
    /// Requests polled while there was no session.
    waiting_for_session: Vec<Command>,
    store_in_flight: Option<Writing>,
    persist_retry_at: Option<UnixMillis>,
    persist_backoff_ms: i64,
    /// Record writes that failed in a row (0 once one works).
    failed_writes: u32,
    storage_error: Option<Error>,
    /// Set once the storage is gone for good ([`Page::storage_lost`]): the
    /// error then stays, whatever a write still in flight answers.
    storage_gone: bool,
    effects: VecDeque<Effect>,
    /// The guest's actions waiting on a write of their own, in order (the
    /// first may be in flight).
    own_writes: Vec<(Ticket, OwnWrite)>,
    /// Actions that ended with an error (an add whose records could not be
    /// stored, a forget whose record could not be deleted), until the
    /// driver takes it ([`Page::take_failure`]).
    failures: Vec<(Ticket, Error)>,
    next_ticket: u32,
    online: bool,
    closed: bool,
    /// What the last [`Effect::BusyChanged`] said.
    reported_busy: bool,
}

impl Page {
    /// A page with no attempts yet.
    pub fn new(config: PageConfig) -> Page {
        let mut sched = Scheduler::new(config.policy, config.concurrency);
        sched.set_hash_limit(config.hash_file_max_bytes);
        Page {
            config,
            sched,
            locks: IdMap::default(),
            fresh: IdSet::default(),
            taking_over: IdSet::default(),
            taking_back: IdSet::default(),
            restoring: IdMap::default(),
            remote_loads: IdSet::default(),
            restores: Vec::new(),
            restore_writes_until: None,
            checked_parts: IdMap::default(),
            rechecking: IdSet::default(),
            held: IdSet::default(),
            kept: IdMap::default(),
            keeping: Keeping::default(),
            storage_room: None,
            kept_since_estimate: 0,
            progress: IdMap::default(),
            session: None,
            session_error: None,
            joining: false,
            stale_token: None,
            waiting_for_session: Vec::new(),
            store_in_flight: None,
            persist_retry_at: None,
            persist_backoff_ms: PERSIST_RETRY_FIRST_MS,
            failed_writes: 0,
            storage_error: None,
            storage_gone: false,
            effects: VecDeque::new(),
            own_writes: Vec::new(),
            failures: Vec::new(),
            next_ticket: 0,
            online: true,
            closed: false,
            reported_busy: false,
        }
    }

    // ----- getters -------------------------------------------------------

    /// The setup.
    pub fn config(&self) -> &PageConfig {
        &self.config
    }

    /// The scheduler (read-only).
    pub fn scheduler(&self) -> &Scheduler {
        &self.sched
    }

    /// One attempt's record.
    pub fn record(&self, id: &Uuid) -> Option<&AttemptRecord> {
        self.sched.record(id)
    }

    /// Every record, in the order the guest added them.
    pub fn records(&self) -> impl Iterator<Item = &AttemptRecord> {
        self.sched.records()
    }

    /// The guest session, once there is one.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// Why the server refused to open a guest session (wrong guest code,
    /// no such event), until a join works.
    pub fn session_error(&self) -> Option<&Error> {
        self.session_error.as_ref()
    }

    /// Why attempt records cannot be saved right now.
    pub fn storage_error(&self) -> Option<&Error> {
        self.storage_error.as_ref()
    }

    /// How many writes of attempt records failed in a row (0 once one
    /// works): each is a moment the page acted while it could not save.
    pub fn failed_writes(&self) -> u32 {
        self.failed_writes
    }

    /// Whether this page holds the file's bytes in memory.
    pub fn holds_file(&self, blob_key: &Uuid) -> bool {
        self.held.contains_key(blob_key)
    }

    /// Whether the file's bytes are kept in IndexedDB.
    pub fn keeps_file(&self, blob_key: &Uuid) -> bool {
        self.kept.contains_key(blob_key)
    }

    /// Whether the attempt still wants its bytes sent (it is not finished
    /// or cancelled).
    pub fn is_active(&self, id: &Uuid) -> bool {
        self.sched.record(id).is_some_and(|r| !r.is_terminal())
    }

    /// Whether a join of the event is under way.
    pub fn is_joining(&self) -> bool {
        self.joining
    }

    /// Whether the page was closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn has_blob(&self, r: &AttemptRecord) -> bool {
        self.held.contains_key(&r.blob_key) || self.kept.contains_key(&r.blob_key)
    }

    /// The app's view of one attempt.
    pub fn view(&self, id: &Uuid) -> Option<AttemptView> {
        let r = self.sched.record(id)?;
        let progress = match &r.multipart {
            // Parts stored, plus the bytes of parts on the wire.
            Some(ledger) => {
                Some((ledger.bytes_done(r.file.size) as f64 + self.sched.part_bytes_in_flight(id), r.file.size as f64))
            }
            None => self.progress.get(id).map(|p| (p.0, p.1)),
        };
        let facts = PageFacts {
            progress,
            driven_here: self.sched.is_owned(id),
            file_held: self.has_blob(r),
            file_kept: self.kept.contains_key(&r.blob_key),
            not_kept: self.not_kept(id).map(NotKept::as_str),
            online: self.online,
        };
        Some(AttemptView::of(r, facts))
    }

    /// Every attempt's view, oldest first.
    pub fn views(&self) -> Vec<AttemptView> {
        self.sched.records().filter_map(|r| self.view(&r.id)).collect()
    }

    /// Whether this page drives (or is about to drive) an attempt that goes
    /// on without the guest: not finished, not paused, not waiting for its
    /// file to be picked again. A retry's wait, a renewal and a confirm
    /// count; an attempt another page drives does not. What an app holds a
    /// Screen Wake Lock for ([`Effect::BusyChanged`] says when it changes).
    pub fn is_busy(&self) -> bool {
        !self.closed
            && self.sched.records_with_standing().any(|(r, standing)| {
                let driven = standing.owned || self.fresh.contains_key(&r.id);
                let waits_for_the_guest = r.holds_back() || (r.needs_file() && !self.has_blob(r));
                driven && !r.is_terminal() && !waits_for_the_guest
            })
    }

    /// Whether every attempt this page drives is finished (or waits for the
    /// guest), with nothing in flight and nothing left to store or answer.
    pub fn is_idle(&self) -> bool {
        self.sched.is_idle()
            && !self.joining
            && self.rechecking.is_empty()
            && self.own_writes.is_empty()
            && self.store_in_flight.is_none()
            && self.taking_over.is_empty()
            && !self.locks.values().any(|s| *s == LockState::Asking)
            && self.sched.records_with_standing().all(|(r, standing)| {
                // A fresh attempt whose lock is not granted yet is about to be
                // driven here.
                let waiting_for_lock = !r.is_terminal() && !standing.owned && self.fresh.contains_key(&r.id);
                standing.persisted && !waiting_for_lock
            })
    }

    /// Whether every lock asked for has an answer and no take-over is
    /// reading its record.
    fn locks_settled(&self) -> bool {
        self.taking_over.is_empty() && !self.locks.values().any(|s| *s == LockState::Asking)
    }

    /// Records are being written, or wait to be, and writing works (a
    /// storage error does not hold anything up that it would not anyway).
    fn writing_back(&self) -> bool {
        self.storage_error.is_none() && (self.store_in_flight.is_some() || self.sched.has_dirty())
    }

    // ----- the user's actions ----------------------------------------------

    /// Shows the records of earlier visits (not driven: see
    /// [`Page::restore`]), with the blob keys of the files kept in
    /// IndexedDB.
    pub fn open(&mut self, records: Vec<AttemptRecord>, kept: &[Uuid]) {
        self.note_kept(&records, kept);
        for r in records {
            self.show(r);
        }
    }

    /// What the server says about its event that the page acts on: files
    /// up to its multipart threshold are hashed whole before authorize.
    fn learn_event(&mut self, event: &EventInfo) {
        if let Some(threshold) = event.multipart_threshold {
            self.sched.set_hash_limit(threshold.min(self.config.hash_file_max_bytes));
        }
    }

    /// A session read from storage, or joined before the page started.
    pub fn set_session(&mut self, session: Session) {
        self.learn_event(&session.event);
        self.session = Some(session);
    }

    /// Joins the event now, in the background, if there is no session (a
    /// first visit): the event's restrictions and a wrong guest code are
    /// known early, and nothing waits for it — ids are minted here, and the
    /// requests that need the session wait for it.
    pub fn join_now(&mut self) {
        if self.session.is_none() && !self.joining && !self.closed {
            self.joining = true;
            self.effects.push_back(Effect::Join { stale_token: self.stale_token.clone() });
        }
    }

    fn note_kept(&mut self, records: &[AttemptRecord], kept: &[Uuid]) {
        for key in kept {
            let size = records.iter().find(|r| r.blob_key == *key).map_or(0, |r| r.file.size);
            self.kept.insert(*key, size);
        }
    }

    /// Shows a stored record without driving it (another page may).
    fn show(&mut self, record: AttemptRecord) {
        let revision = record.revision;
        let has_blob = self.has_blob(&record);
        self.sched.insert(record, has_blob, false, revision);
    }

    /// Drives a stored record from here on, asking the server first.
    fn take_over(&mut self, mut record: AttemptRecord, now: UnixMillis) {
        let stored_revision = record.revision;
        record.restore(now);
        if self.taking_back.remove(&record.id).is_some() {
            record.take_back(now);
        }
        let has_blob = self.has_blob(&record);
        self.sched.insert(record, has_blob, true, stored_revision);
    }

    /// Attempts that a file picked now might be given to (same name, size
    /// and time), whose store already holds some of their parts: the driver
    /// asks the server for their parts ([`Page::learn_stored_parts`])
    /// before it hashes anything ([`Page::identity_checks`]), so that a
    /// part the store finished meanwhile is checked too, and never sent
    /// again.
    pub fn repick_candidates(&self, files: &[FileInfo]) -> Vec<Uuid> {
        self.sched
            .records()
            .filter(|r| files.iter().any(|info| self.takes_file(r, info)))
            .filter(|r| r.multipart.as_ref().is_some_and(|l| !l.done.is_empty() || r.object_key.is_some()))
            .map(|r| r.id)
            .collect()
    }

    /// Whether a file picked now (`info`) would go to attempt `r`: one that
    /// waits for it, or failed (then it is retried with it).
    /// A live attempt that holds no bytes yet (restored, before it finds
    /// it needs them) takes the file too; one that holds its own keeps them.
    fn takes_file(&self, r: &AttemptRecord, info: &FileInfo) -> bool {
        r.event == self.config.event
            && r.file.same_file(info)
            && (r.needs_file() || r.has_failed() || (!r.is_terminal() && !self.has_blob(r)))
    }

    /// The server's list of the parts it holds for the attempts asked
    /// about before an add: each ledger takes the store's own list (the
    /// server wins), nothing else of the attempts changes.
    pub fn learn_stored_parts(&mut self, response: &StatusResponse) {
        for status in &response.results {
            if let AttemptStatus::Authorized { id, parts: Some(parts), .. } = status {
                self.sched.reconcile_parts(id, parts);
            }
        }
    }

    /// What the driver hashes of each picked file before [`Page::add`]: a
    /// file that may be given to an attempt whose store holds parts of it
    /// must be the same bytes in every one of those parts (same name, size
    /// and time are not enough to splice two files together). Each check
    /// names the file (by index) and the byte ranges of the stored parts;
    /// one part is read at a time.
    pub fn identity_checks(&self, files: &[FileInfo]) -> Vec<IdentityCheck> {
        files
            .iter()
            .enumerate()
            .filter_map(|(index, info)| {
                let mut parts: Vec<PartRange> = Vec::new();
                for r in self.sched.records().filter(|r| self.takes_file(r, info)) {
                    let Some(ledger) = &r.multipart else { continue };
                    for done in &ledger.done {
                        if !parts.iter().any(|p| p.number == done.number) {
                            let (start, end) = ledger.range(done.number, info.size);
                            parts.push(PartRange { number: done.number, start, end });
                        }
                    }
                }
                parts.sort_by_key(|p| p.number);
                (!parts.is_empty()).then_some(IdentityCheck { index, parts })
            })
            .collect()
    }

    /// Whether the file whose stored parts hash to `digests` is the same,
    /// byte for byte, as the one attempt `r` holds parts of: every part the
    /// store holds has a known digest, and the file's part has that digest.
    fn same_bytes(r: &AttemptRecord, digests: &[(u32, String)]) -> bool {
        r.multipart.as_ref().is_none_or(|ledger| {
            ledger.done.iter().all(|done| {
                done.sha256.as_ref().is_some_and(|known| digests.iter().any(|(n, d)| *n == done.number && d == known))
            })
        })
    }

    /// Files the guest picked: each is checked against the app's and the
    /// event's restrictions (all are refused while the server refuses this
    /// page a session); the same file (name, size, modification time)
    /// keeps its attempt — one that waits for it is given it back, a failed
    /// one is retried (same id), a live or confirmed one is a duplicate;
    /// every other file gets a new attempt, minted here. `digests` holds,
    /// by file index, the digests of the parts [`Page::identity_checks`]
    /// asked for: a file that differs from an attempt's stored parts in any
    /// of them (or could not be hashed) is not given to that attempt, which
    /// keeps waiting for its own file, untouched; it is a new attempt
    /// ([`Added::NotSameFile`]).
    ///
    /// The new records are then the page's first write, strict
    /// ([`Effect::Store`]); nothing of them is driven until it is done. The
    /// ticket is done once the files are kept (or could not be), or once the
    /// records could not be stored: then nothing of them remains, and
    /// [`Page::take_failure`] says why.
    pub fn add(
        &mut self,
        files: &[FileInfo],
        digests: &[Vec<(u32, String)>],
        now: UnixMillis,
        entropy: &mut dyn Entropy,
    ) -> (AddPlan, Ticket) {
        let mut plan = self.plan_add(files, digests, now, entropy);
        plan.hash_ahead = self.hashes_ahead(&plan);
        let ticket = self.record_added(plan.clone());
        (plan, ticket)
    }

    /// What an add of these files does ([`Page::add`]).
    fn plan_add(
        &mut self,
        files: &[FileInfo],
        digests: &[Vec<(u32, String)>],
        now: UnixMillis,
        entropy: &mut dyn Entropy,
    ) -> AddPlan {
        let mut plan = AddPlan {
            outcomes: Vec::new(),
            new_records: Vec::new(),
            hold: Vec::new(),
            keep: Vec::new(),
            hash_ahead: Vec::new(),
        };
        // A pick over the app's caps is refused whole, before anything.
        let total_bytes = files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size));
        if let Err(error) = self.config.pick_limits.check(files.len(), total_bytes) {
            plan.outcomes =
                files.iter().map(|f| Added::Refused { file_name: f.name.clone(), error: error.clone() }).collect();
            return plan;
        }
        let event_limits = self.session.as_ref().map(|s| Restrictions {
            max_file_bytes: Some(s.event.max_file_bytes),
            allowed_types: s.event.allowed_types.clone(),
        });
        for (index, info) in files.iter().enumerate() {
            // A file given back for a check is here again.
            let again: Vec<Uuid> =
                self.sched.records().filter(|r| r.file.same_file(info)).map(|r| r.blob_key).collect();
            for key in again {
                self.rechecking.remove(&key);
            }
            // The server refused this page a session (a wrong guest code):
            // nothing could ever be sent, so nothing is recorded.
            if let Some(error) = &self.session_error {
                plan.outcomes.push(Added::Refused { file_name: info.name.clone(), error: error.clone() });
                continue;
            }
            let checked = check_filename(&info.name)
                .and_then(|()| self.config.restrictions.check(info.size, &info.content_type))
                .and_then(|()| event_limits.as_ref().map_or(Ok(()), |l| l.check(info.size, &info.content_type)));
            if let Err(error) = checked {
                plan.outcomes.push(Added::Refused { file_name: info.name.clone(), error });
                continue;
            }
            // Bytes that go on from stored parts must be the same bytes.
            let digests = digests.get(index).map_or(&[][..], Vec::as_slice);
            let mut not_same: Option<Uuid> = None;
            let picked_again = self.sched.records().chain(plan.new_records.iter()).find(|r| {
                let candidate = r.event == self.config.event
                    && r.file.same_file(info)
                    && (!r.is_terminal() || r.confirmation == Confirmation::Confirmed || r.has_failed());
                if candidate && self.takes_file(r, info) && !Self::same_bytes(r, digests) {
                    not_same.get_or_insert(r.id);
                    return false;
                }
                candidate
            });
            if let Some(r) = picked_again {
                let (id, blob_key, needs_file, failed) = (r.id, r.blob_key, r.needs_file(), r.has_failed());
                let takes_it = self.takes_file(r, info);
                if plan.new_records.iter().any(|n| n.id == id) {
                    plan.outcomes.push(Added::Duplicate(id));
                    continue;
                }
                // Only an attempt without its bytes takes the file picked
                // now (checked above against its stored parts); one that
                // holds its own bytes keeps them.
                if takes_it && !plan.hold.iter().any(|(_, k)| *k == blob_key) {
                    plan.hold.push((index, blob_key));
                    self.held.insert(blob_key, ());
                    self.sched.set_has_blob(&id, true);
                    // The parts the store holds were checked against this
                    // file; any other the server lists later is checked too
                    // before a byte is sent.
                    if let Some(ledger) = self.sched.record(&id).and_then(|r| r.multipart.as_ref()) {
                        self.checked_parts.insert(id, ledger.done.iter().map(|p| p.number).collect());
                    }
                }
                if (needs_file || failed) && !self.kept.contains_key(&blob_key) {
                    plan.keep.push(blob_key);
                }
                if (needs_file && self.sched.attach_file(&id, now)) || (failed && self.retry(&id, now) == Some(true)) {
                    plan.outcomes.push(Added::Reattached(id));
                } else {
                    plan.outcomes.push(Added::Duplicate(id));
                }
                continue;
            }
            let id = new_attempt_id(entropy);
            plan.outcomes.push(match not_same {
                Some(waiting) => Added::NotSameFile { id, waiting },
                None => Added::New(id),
            });
            plan.hold.push((index, id));
            // One millisecond apart, so the guest's order survives a reload.
            let created_at = now + plan.new_records.len() as i64;
            plan.new_records.push(AttemptRecord::new(id, &self.config.event, info.clone(), created_at));
        }
        plan
    }

    /// [`AddPlan::hash_ahead`].
    fn hashes_ahead(&self, plan: &AddPlan) -> Vec<Uuid> {
        let limit = self.sched.hash_limit();
        plan.new_records
            .iter()
            .filter(|r| r.file.size <= limit && r.sha256.is_none())
            .take(self.config.concurrency.max(1))
            .map(|r| r.id)
            .collect()
    }

    /// Carries out an add's plan: its new records are stored first, strictly
    /// ([`Effect::Store`]); then they are driven once their locks are
    /// granted, and the files are kept for a reload.
    fn record_added(&mut self, plan: AddPlan) -> Ticket {
        let ticket = self.ticket();
        if plan.new_records.is_empty() {
            self.handle_added(&plan, ticket);
        } else {
            self.own_writes.push((ticket, OwnWrite::Add(plan)));
        }
        ticket
    }

    /// The page's storage is gone for good (another page upgraded or
    /// deleted the database): reported as a storage error at once, before a
    /// write fails, so no change that is not on disk is acted on meanwhile.
    /// The error is then reported once and stays: no later write's answer
    /// clears or replaces it (only a reload can go on).
    pub fn storage_lost(&mut self, error: Error) {
        if !self.storage_gone {
            self.set_storage_error(Some(error));
            self.storage_gone = true;
        }
    }

    /// The answer to the first of the page's own writes: the add goes on
    /// (its ticket is done once its files are kept) or the forgotten
    /// attempt goes; or else nothing of the add remains, the attempt stays,
    /// and the ticket is done with the failure ([`Page::take_failure`]).
    fn handle_own_write(&mut self, ticket: Ticket, result: Result<(), Error>, now: UnixMillis) {
        let (_, write) = self.own_writes.remove(0);
        match (write, result) {
            (OwnWrite::Add(plan), Ok(())) => return self.handle_added(&plan, ticket),
            (OwnWrite::Add(plan), Err(error)) => {
                self.discard_added(&plan);
                self.failures.push((ticket, error));
            }
            (OwnWrite::Forget(id), Ok(())) => self.forgotten(&id),
            (OwnWrite::Forget(_), Err(error)) => self.failures.push((ticket, error)),
            (OwnWrite::HandOver(ids), Ok(())) => self.handed_over(&ids),
            // Not stored: they go on here (their views say so).
            (OwnWrite::HandOver(ids), Err(_)) => {
                for id in &ids {
                    self.sched.take_back(id, now);
                    self.effects.push_back(Effect::Changed(*id));
                }
            }
        }
        self.effects.push_back(Effect::Done(ticket));
    }

    /// Why the action of `ticket` failed, once it is done; `None` when it
    /// did not.
    pub fn take_failure(&mut self, ticket: Ticket) -> Option<Error> {
        let at = self.failures.iter().position(|(t, _)| *t == ticket)?;
        Some(self.failures.remove(at).1)
    }

    /// The plan's new records are stored: they are driven once their locks
    /// are granted, and the files are kept for a reload.
    fn handle_added(&mut self, plan: &AddPlan, ticket: Ticket) {
        for record in &plan.new_records {
            self.held.insert(record.blob_key, ());
            self.fresh.insert(record.id, ());
            let revision = record.revision;
            self.sched.insert(record.clone(), true, false, revision);
            self.request_lock(record.id);
        }
        for outcome in &plan.outcomes {
            if let Added::New(id) | Added::Reattached(id) | Added::Duplicate(id) = outcome {
                self.effects.push_back(Effect::Changed(*id));
            }
        }
        let mut keep: Vec<Uuid> = plan.keep.clone();
        keep.extend(plan.new_records.iter().map(|r| r.blob_key));
        self.queue_keep(&keep);
        self.keeping.waiting.push(ticket);
    }

    /// The plan's new records could not be stored: nothing of them remains
    /// (the files picked for them are let go).
    fn discard_added(&mut self, plan: &AddPlan) {
        for record in &plan.new_records {
            self.held.remove(&record.blob_key);
            self.effects.push_back(Effect::DropFile(record.blob_key));
        }
    }

    /// Picks which of these files to keep, within the caps, in order.
    /// How much this site may still store, from the browser's estimate
    /// (`navigator.storage.estimate()`: quota minus usage); `None` where the
    /// browser does not say. Files are kept only while a tenth of it stays
    /// free.
    pub fn set_storage_room(&mut self, room: Option<u64>) {
        self.storage_room = room;
        self.kept_since_estimate = 0;
    }

    fn queue_keep(&mut self, blob_keys: &[Uuid]) {
        let queued_bytes: u64 =
            self.keeping.queue.iter().chain(self.keeping.in_flight.iter().flatten()).map(|(_, s)| *s).sum();
        let mut total: u64 = self.kept.values().sum::<u64>() + queued_bytes;
        let mut room = self
            .storage_room
            .map(|r| ((r as f64) * (1.0 - ROOM_KEPT_FREE)) as u64)
            .map(|r| r.saturating_sub(queued_bytes + self.kept_since_estimate));
        for key in blob_keys {
            let Some(size) = self.sched.records().find(|r| r.blob_key == *key).map(|r| r.file.size) else {
                continue;
            };
            let queued =
                self.keeping.queue.iter().chain(self.keeping.in_flight.iter().flatten()).any(|(k, _)| k == key);
            if queued || self.kept.contains_key(key) {
                continue;
            }
            let refusal = if size > self.config.keep_file_max_bytes {
                Some(NotKept::TooLarge)
            } else if total + size > self.config.keep_files_total_bytes {
                Some(NotKept::OverTotal)
            } else if room.is_some_and(|r| size > r) {
                Some(NotKept::NoRoom)
            } else if self.keeping.broken {
                Some(NotKept::Refused)
            } else {
                None
            };
            match refusal {
                Some(why) => self.sched.set_not_kept(key, Some(why)),
                None => {
                    total += size;
                    room = room.map(|r| r - size);
                    self.sched.set_not_kept(key, None);
                    self.keeping.queue.push((*key, size));
                }
            }
        }
    }

    /// Why the attempt's file is not kept for a reload, if it is not.
    pub fn not_kept(&self, id: &Uuid) -> Option<NotKept> {
        let r = self.sched.record(id)?;
        if self.kept.contains_key(&r.blob_key) {
            return None;
        }
        r.not_kept
    }

    /// Reconciles every unfinished attempt of this event with the server,
    /// given the records and kept files in storage: each asks for its lock
    /// and is driven by exactly one page. The ticket is done once every lock
    /// has an answer; nothing is sent before.
    pub fn restore(&mut self, records: Vec<AttemptRecord>, kept: &[Uuid]) -> Ticket {
        self.note_kept(&records, kept);
        let mut to_lock = Vec::new();
        for r in records {
            let busy_here = self.sched.is_owned(&r.id);
            if !r.is_terminal() && !self.locks.contains_key(&r.id) {
                to_lock.push(r.id);
                self.restoring.insert(r.id, r.clone());
            }
            if !busy_here {
                self.show(r);
            }
        }
        // Moderation may have moved while the page was away.
        self.sched.request_refresh();
        for id in to_lock {
            self.request_lock(id);
        }
        let ticket = self.ticket();
        self.restores.push(ticket);
        ticket
    }

    /// Cancels an attempt (its transfer is aborted); `None` if unknown,
    /// else whether it could be cancelled.
    pub fn cancel(&mut self, id: &Uuid, now: UnixMillis) -> Option<bool> {
        self.sched.record(id)?;
        let ok = self.sched.cancel(id, now);
        self.effects.push_back(Effect::Abort(*id));
        Some(ok)
    }

    /// Pauses an attempt's transfer (what is being sent is aborted; parts
    /// the store holds stay stored); `None` if unknown, else whether it is
    /// paused (false once its bytes are stored or it ended).
    pub fn pause(&mut self, id: &Uuid, now: UnixMillis) -> Option<bool> {
        self.sched.record(id)?;
        let ok = self.sched.pause(id, now);
        if ok {
            self.effects.push_back(Effect::Abort(*id));
        }
        Some(ok)
    }

    /// Resumes a paused transfer; `None` if unknown, else whether it was
    /// paused.
    pub fn resume(&mut self, id: &Uuid, now: UnixMillis) -> Option<bool> {
        self.sched.record(id)?;
        Some(self.sched.resume(id, now))
    }

    /// Retries a failed attempt; `None` if unknown, else whether anything
    /// changed (a double click retries once).
    pub fn retry(&mut self, id: &Uuid, now: UnixMillis) -> Option<bool> {
        self.sched.record(id)?;
        let changed = self.sched.retry(id, now);
        if changed && !self.locks.contains_key(id) {
            // Driven only once this page holds its lock again; the record in
            // memory is the one just retried.
            self.sched.set_owned(id, false);
            self.fresh.insert(*id, ());
            self.request_lock(*id);
        }
        Some(changed)
    }

    /// Forgets an attempt: it is cancelled, its stored record deleted
    /// ([`Effect::Store`]), then it goes, with its lock and, unless
    /// another attempt shares them, its file's bytes. `None` if unknown;
    /// else the ticket, done once it is gone, or once its record could not
    /// be deleted ([`Page::take_failure`]: it stays, cancelled).
    pub fn forget(&mut self, id: &Uuid, now: UnixMillis) -> Option<Ticket> {
        self.sched.record(id)?;
        self.cancel(id, now);
        let ticket = self.ticket();
        self.own_writes.push((ticket, OwnWrite::Forget(*id)));
        Some(ticket)
    }

    /// The attempt's record is deleted: it goes, with its lock and, unless
    /// another attempt shares them, its file's bytes.
    fn forgotten(&mut self, id: &Uuid) {
        let Some(record) = self.sched.remove(id) else {
            return;
        };
        if self.locks.remove(id).is_some() {
            self.effects.push_back(Effect::ReleaseLock(*id));
        }
        self.fresh.remove(id);
        self.progress.remove(id);
        if !self.sched.records().any(|r| r.blob_key == record.blob_key) {
            self.let_go_of_file(record.blob_key);
        }
        self.effects.push_back(Effect::Announce(*id));
        self.effects.push_back(Effect::Removed(*id));
    }

    /// Prepares a hand-over ([`Page::hand_over`]): the files not sent yet are
    /// hashed and authorized all at once (each needs its signed URL), and
    /// no new transfer starts. [`Page::hand_over_waits`] says when they all
    /// answered.
    pub fn prepare_hand_over(&mut self) {
        self.sched.prepare_hand_over(true);
    }

    /// Whether a hand-over being prepared still waits for a signed URL.
    pub fn hand_over_waits(&self) -> bool {
        self.sched.hand_over_waits()
    }

    /// Hands the transfers this page drives in one PUT, with their signed
    /// URL in hand, to a Background Fetch (which goes on after the tab is
    /// closed): each is paused here ([`AttemptRecord::hand_over`], what is
    /// being sent is aborted), stored strictly, then its lock is let go, so
    /// that the service worker can confirm it when the fetch ends. The ids
    /// handed over, and the ticket done once they are stored and let go (or
    /// could not be stored: then they are taken back at once, and their
    /// views say so).
    pub fn hand_over(&mut self, now: UnixMillis) -> (Vec<Uuid>, Ticket) {
        self.sched.prepare_hand_over(false);
        let ticket = self.ticket();
        let candidates: Vec<Uuid> = self
            .sched
            .records()
            .filter(|r| r.can_hand_over() && self.sched.is_owned(&r.id) && self.has_blob(r))
            .filter(|r| self.locks.get(&r.id) == Some(&LockState::Held))
            .map(|r| r.id)
            .collect();
        let mut ids = Vec::new();
        for id in candidates {
            if self.sched.hand_over(&id, now) {
                self.effects.push_back(Effect::Abort(id));
                self.effects.push_back(Effect::Changed(id));
                ids.push(id);
            }
        }
        if ids.is_empty() || self.closed {
            self.effects.push_back(Effect::Done(ticket));
        } else {
            self.own_writes.push((ticket, OwnWrite::HandOver(ids.clone())));
        }
        (ids, ticket)
    }

    /// Takes back every attempt of this page handed to a Background Fetch
    /// ([`AttemptRecord::take_back`]): one this page holds the lock of goes
    /// on at once; the others once their lock is held again (the service
    /// worker may be confirming them: then they show what it stored). Only
    /// those of `only`, when given. The ids taken back.
    pub fn take_back(&mut self, only: Option<&[Uuid]>, now: UnixMillis) -> Vec<Uuid> {
        self.sched.prepare_hand_over(false);
        let handed: Vec<(Uuid, bool)> = self
            .sched
            .records()
            .filter(|r| r.background && only.is_none_or(|ids| ids.contains(&r.id)))
            .map(|r| (r.id, r.is_terminal()))
            .collect();
        let mut ids = Vec::new();
        for (id, terminal) in handed {
            if self.sched.is_owned(&id) {
                self.sched.take_back(&id, now);
                self.effects.push_back(Effect::Changed(id));
            } else if !terminal {
                self.taking_back.insert(id, ());
                self.fresh.remove(&id);
                self.request_lock(id);
            } else {
                continue;
            }
            ids.push(id);
        }
        ids
    }

    /// The hand-over's records are stored: their locks are let go, so the
    /// service worker can drive them.
    fn handed_over(&mut self, ids: &[Uuid]) {
        for id in ids {
            if self.sched.record(id).is_none_or(|r| !r.background) {
                continue;
            }
            if self.locks.remove(id).is_some() {
                self.effects.push_back(Effect::ReleaseLock(*id));
            }
            self.fresh.remove(id);
            self.sched.set_owned(id, false);
            self.effects.push_back(Effect::Changed(*id));
        }
    }

    /// Ask the server for fresh moderation states.
    pub fn refresh(&mut self) {
        self.sched.request_refresh();
    }

    /// Upload progress of an attempt; reported to the app at most every
    /// 100 ms (and at the end).
    fn progress(&mut self, id: &Uuid, sent: f64, total: f64, now: UnixMillis) {
        let entry = self.progress.get_or_insert_with(*id, || (0.0, total, i64::MIN));
        entry.0 = sent;
        entry.1 = total;
        if now.saturating_sub(entry.2) >= PROGRESS_INTERVAL_MS || sent >= total {
            entry.2 = now;
            self.effects.push_back(Effect::Changed(*id));
        }
    }

    /// Stops: transfers are aborted and every lock released. Records stay
    /// stored for the next visit.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.effects.clear();
        let busy: Vec<Uuid> = self.sched.records().filter(|r| self.sched.is_busy(&r.id)).map(|r| r.id).collect();
        self.effects.extend(busy.into_iter().map(Effect::Abort));
        let locks: Vec<Uuid> = self.locks.drain().map(|(id, _)| id).collect();
        self.effects.extend(locks.into_iter().map(Effect::ReleaseLock));
    }

    fn ticket(&mut self) -> Ticket {
        self.next_ticket += 1;
        Ticket(self.next_ticket)
    }

    fn request_lock(&mut self, id: Uuid) {
        if self.closed || self.locks.contains_key(&id) {
            return;
        }
        self.locks.insert(id, LockState::Asking);
        self.effects.push_back(Effect::AskLock(id));
    }

    /// After the server listed the parts of attempts given a file picked
    /// again: a part it holds that the file was not checked against (the
    /// list asked for before the add could not be had, or the store
    /// finished a part since) means the file may not be the one stored
    /// there. Nothing is sent: the file goes through the add again
    /// ([`Effect::Recheck`]), which checks it against every part the server
    /// now lists; meanwhile the attempt waits for it.
    fn check_listed_parts(&mut self, ids: &[Uuid]) {
        for id in ids {
            let Some(checked) = self.checked_parts.remove(id) else { continue };
            let Some(r) = self.sched.record(id) else { continue };
            let unchecked = r.multipart.as_ref().is_some_and(|l| l.done.iter().any(|p| !checked.contains(&p.number)));
            if unchecked && !r.is_terminal() {
                let blob_key = r.blob_key;
                if self.held.contains_key(&blob_key) {
                    self.rechecking.insert(blob_key, ());
                    self.effects.push_back(Effect::Recheck(blob_key));
                }
                self.let_go_of_file(blob_key);
                self.sched.set_has_blob(id, false);
            }
        }
    }

    fn let_go_of_file(&mut self, blob_key: Uuid) {
        if self.held.remove(&blob_key).is_some() {
            self.effects.push_back(Effect::DropFile(blob_key));
        }
        if self.kept.remove(&blob_key).is_some() {
            self.effects.push_back(Effect::DeleteKeptFiles(vec![blob_key]));
        }
    }

    // ----- inputs ------------------------------------------------------------

    /// Takes in what happened.
    pub fn handle(&mut self, input: Input, now: UnixMillis, entropy: &mut dyn Entropy) {
        if self.closed {
            return;
        }
        match input {
            Input::Stored(result) => self.handle_stored(result, now),
            Input::Lock { id, granted } => self.handle_lock(id, granted, now),
            Input::Loaded { id, record, file_found } => self.handle_loaded(id, record, file_found, now),
            Input::RemoteChange(id) => {
                if self.sched.is_owned(&id) || self.taking_over.contains_key(&id) {
                    return;
                }
                self.remote_loads.insert(id, ());
                self.effects.push_back(Effect::Load { id, find_file: None });
            }
            Input::Kept(result) => self.handle_kept(result),
            Input::Joined(result) => self.handle_joined(result, now, entropy),
            Input::Outcome { id, outcome, token } => {
                self.drop_session_if_forgotten(outcome_failure(&outcome), &token);
                if matches!(outcome, Outcome::Authorize(Ok(_))) {
                    // The attempt belongs to the session that authorized it.
                    // The page's own session is stored (in `meta`) before it
                    // is used: a reload that loses the record's copy asks
                    // with that same token, so the PUT need not wait for it
                    // to be written (issue 34); another one must be stored.
                    let own = self.session.as_ref().is_some_and(|s| s.token == token);
                    self.sched.set_session_token(&id, &token, !own, now);
                }
                self.progress.remove(&id);
                self.sched.handle(&id, outcome, now, entropy);
            }
            Input::Status { ids, result, token } => {
                self.drop_session_if_forgotten(result.as_ref().err(), &token);
                let answered = result.is_ok();
                self.sched.handle_status(&ids, result, now, entropy);
                if answered {
                    self.check_listed_parts(&ids);
                }
            }
            Input::FileUnavailable { id, part } => {
                if let Some(blob_key) = self.sched.record(&id).map(|r| r.blob_key) {
                    self.kept.remove(&blob_key);
                    self.held.remove(&blob_key);
                    // The attempt asks the server, then waits for the file.
                    self.sched.set_has_blob(&id, false);
                }
                match part {
                    Some(number) => self.sched.part_unreadable(&id, number, now, entropy),
                    None => {
                        let failure = Failure::Unexpected("the file's bytes are not available".into());
                        self.sched.handle(&id, Outcome::Upload(Err(failure)), now, entropy);
                    }
                }
            }
            Input::Progress { id, part: Some(number), sent, .. } => {
                self.sched.part_progress(&id, number, sent);
                let size = self.sched.record(&id).map_or(0.0, |r| r.file.size as f64);
                self.progress(&id, 0.0, size, now);
            }
            Input::Progress { id, part: None, sent, total } => self.progress(&id, sent, total, now),
            Input::Online(online) => {
                self.online = online;
                self.sched.set_online(online);
            }
        }
    }

    fn handle_stored(&mut self, result: Result<(), Error>, now: UnixMillis) {
        let records = match self.store_in_flight.take() {
            None => return,
            Some(Writing::Records(records)) => records,
            Some(Writing::Own(ticket)) => return self.handle_own_write(ticket, result, now),
        };
        if let Err(error) = result {
            // The attempts wait for their records (write-ahead), so the write
            // is tried again, later each time, and the app is told why.
            for r in &records {
                self.sched.mark_dirty(r.id);
            }
            let delay = self.persist_backoff_ms;
            self.failed_writes += 1;
            self.persist_backoff_ms = (delay * 2).min(PERSIST_RETRY_CAP_MS);
            self.persist_retry_at = Some(now + delay);
            self.set_storage_error(Some(error));
            return;
        }
        self.persist_backoff_ms = PERSIST_RETRY_FIRST_MS;
        self.failed_writes = 0;
        self.set_storage_error(None);
        for stored in &records {
            self.sched.mark_persisted(&stored.id, stored.revision);
            // Decide on the record as it is now: the guest may have acted
            // (a retry) while the write was under way.
            let Some(r) = self.sched.record(&stored.id).cloned() else {
                continue;
            };
            let new_successor = !r.is_terminal() && !self.locks.contains_key(&r.id) && self.sched.is_owned(&r.id);
            if new_successor {
                // Minted here by the scheduler: driven only once its own lock
                // is granted, like any new attempt.
                self.sched.set_owned(&r.id, false);
            }
            if r.is_terminal() {
                if self.locks.remove(&r.id).is_some() {
                    self.effects.push_back(Effect::ReleaseLock(r.id));
                    self.sched.set_owned(&r.id, false);
                }
                self.fresh.remove(&r.id);
                if matches!(r.confirmation, Confirmation::Confirmed | Confirmation::Rejected) {
                    let shared = self.sched.records().any(|o| o.blob_key == r.blob_key && !o.is_terminal());
                    if !shared {
                        self.let_go_of_file(r.blob_key);
                    }
                }
            } else if new_successor {
                self.fresh.insert(r.id, ());
                self.request_lock(r.id);
            }
        }
        for r in &records {
            self.effects.push_back(Effect::Changed(r.id));
            self.effects.push_back(Effect::Announce(r.id));
        }
    }

    fn set_storage_error(&mut self, error: Option<Error>) {
        if self.storage_gone {
            return;
        }
        // While writes fail, nothing acts on a state that is not on disk:
        // the changes otherwise stored without holding their attempt hold
        // it too (docs/protocol.md §5.1).
        self.sched.set_hold_all(error.is_some());
        if self.storage_error != error {
            self.storage_error = error.clone();
            self.effects.push_back(Effect::StorageError(error));
        }
    }

    fn handle_lock(&mut self, id: Uuid, granted: bool, now: UnixMillis) {
        let Some(state) = self.locks.get_mut(&id) else {
            return;
        };
        *state = if granted { LockState::Held } else { LockState::Elsewhere };
        if !granted {
            // Another page drives it; when it lets go, read it again.
            self.restoring.remove(&id);
            self.fresh.remove(&id);
            self.sched.set_owned(&id, false);
            return;
        }
        if let Some(record) = self.restoring.remove(&id) {
            // Granted at once during a restore: the record read moments ago
            // is the latest; the server check comes next.
            self.take_over(record, now);
            return;
        }
        if self.fresh.contains_key(&id) {
            self.sched.set_owned(&id, true);
            self.effects.push_back(Effect::Changed(id));
            return;
        }
        // Taking over (another page went away): the stored record is the
        // latest truth this browser has; the server comes next. Another page
        // may have kept the file since this one last looked.
        self.taking_over.insert(id, ());
        let find_file = self.sched.record(&id).filter(|r| !self.has_blob(r)).map(|r| r.blob_key);
        self.effects.push_back(Effect::Load { id, find_file });
    }

    fn handle_loaded(
        &mut self,
        id: Uuid,
        stored: Result<Option<AttemptRecord>, Error>,
        file_found: bool,
        now: UnixMillis,
    ) {
        if let (true, Ok(Some(r))) = (file_found, &stored) {
            self.kept.insert(r.blob_key, r.file.size);
        }
        if self.taking_over.remove(&id).is_some() {
            match stored {
                Ok(Some(record)) if !record.is_terminal() => self.take_over(record, now),
                other => {
                    // Terminal (another page, or the service worker, ended
                    // it) or gone: nothing is taken back.
                    self.taking_back.remove(&id);
                    if let Ok(Some(record)) = other {
                        self.show(record);
                    }
                    if self.locks.remove(&id).is_some() {
                        self.effects.push_back(Effect::ReleaseLock(id));
                    }
                    self.effects.push_back(Effect::Changed(id));
                }
            }
            return;
        }
        if self.remote_loads.remove(&id).is_none() || self.sched.is_owned(&id) {
            return;
        }
        let record = match stored {
            Ok(Some(record)) => record,
            Ok(None) => {
                // Forgotten in another tab.
                let removed = self.sched.remove(&id).is_some();
                if self.locks.remove(&id).is_some() {
                    self.effects.push_back(Effect::ReleaseLock(id));
                }
                if removed {
                    self.effects.push_back(Effect::Removed(id));
                }
                return;
            }
            Err(_) => return,
        };
        if record.event != self.config.event {
            return;
        }
        let terminal = record.is_terminal();
        self.show(record);
        self.effects.push_back(Effect::Changed(id));
        // Be ready to take over if the page driving it goes away.
        if !terminal {
            self.request_lock(id);
        }
    }

    fn handle_kept(&mut self, result: Result<(), Error>) {
        let Some(batch) = self.keeping.in_flight.take() else {
            return;
        };
        match result {
            Ok(()) => {
                self.keeping.proven = true;
                let mut unneeded = Vec::new();
                for (key, size) in batch {
                    self.kept_since_estimate += size;
                    if self.sched.records().any(|r| r.blob_key == key && !r.is_terminal()) {
                        self.kept.insert(key, size);
                        let ids: Vec<Uuid> = self.sched.records().filter(|r| r.blob_key == key).map(|r| r.id).collect();
                        self.effects.extend(ids.into_iter().map(Effect::Changed));
                    } else {
                        // Finished meanwhile: the copy is not needed.
                        unneeded.push(key);
                    }
                }
                if !unneeded.is_empty() {
                    self.effects.push_back(Effect::DeleteKeptFiles(unneeded));
                }
            }
            Err(error) => {
                // Keeping only serves a reload: the uploads go on.
                self.keeping.broken = true;
                let refused: Vec<Uuid> = batch.iter().chain(self.keeping.queue.iter()).map(|(k, _)| *k).collect();
                for key in &refused {
                    self.sched.set_not_kept(key, Some(NotKept::Refused));
                }
                let ids: Vec<Uuid> = self
                    .sched
                    .records()
                    .filter(|r| batch.iter().chain(self.keeping.queue.iter()).any(|(k, _)| *k == r.blob_key))
                    .map(|r| r.id)
                    .collect();
                self.effects.extend(ids.into_iter().map(Effect::Changed));
                self.keeping.queue.clear();
                self.effects.push_back(Effect::FilesNotKept(error));
            }
        }
    }

    fn handle_joined(&mut self, result: Result<Session, Failure>, now: UnixMillis, entropy: &mut dyn Entropy) {
        self.joining = false;
        let waiting = std::mem::take(&mut self.waiting_for_session);
        match result {
            Ok(session) => {
                for command in waiting {
                    self.effects.push_back(Effect::Send { command, token: session.token.clone() });
                }
                self.learn_event(&session.event);
                self.session = Some(session);
                self.session_error = None;
                self.effects.push_back(Effect::SessionChanged);
            }
            Err(failure) => {
                // Refused for good (a wrong guest code, no such event), not
                // merely unanswered: the app is told, and each request that
                // waited fails with the same reason.
                let refused = classify(Operation::Authorize, &failure) == Disposition::Fail;
                if let (true, Failure::Http { code, message, .. }) = (refused, &failure) {
                    let code = code.as_deref().and_then(ErrorCode::parse).unwrap_or(ErrorCode::Forbidden);
                    let error = Some(Error::new(code, message.clone()));
                    if self.session_error != error {
                        self.session_error = error;
                        self.effects.push_back(Effect::SessionChanged);
                    }
                }
                // Each request that waited fails as if it had been sent.
                for command in waiting {
                    match (command.id(), Outcome::failed(&command, failure.clone())) {
                        (Some(id), Some(outcome)) => self.sched.handle(&id, outcome, now, entropy),
                        _ => {
                            if let Command::Status { ids } = &command {
                                self.sched.handle_status(ids, Err(failure.clone()), now, entropy);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The server no longer knows this session: the next request joins
    /// again.
    fn drop_session_if_forgotten(&mut self, failure: Option<&Failure>, token: &str) {
        let forgotten = matches!(failure, Some(Failure::Http { code: Some(code), .. }) if code == ErrorCode::InvalidSession.as_str());
        if forgotten && self.session.as_ref().is_some_and(|s| s.token == token) {
            self.session = None;
            self.stale_token = Some(token.to_owned());
        }
    }

    // ----- outputs -----------------------------------------------------------

    /// The next thing to do, if any. Call until `None`, then wait for an
    /// input or [`Page::poll_timeout`].
    pub fn poll_effect(&mut self, now: UnixMillis) -> Option<Effect> {
        if let Some(effect) = self.effects.pop_front() {
            return Some(effect);
        }
        if self.closed {
            return self.poll_busy();
        }
        if let Some(effect) = self.poll_store(now) {
            return Some(effect);
        }
        if !self.restores.is_empty() {
            // Nothing is sent while a restore settles its locks and writes
            // back the records it took over (each granted lock's record is
            // written before that attempt may act), so the status checks go
            // out in full batches, not one for the first record written and
            // then the rest; the write-back is waited for a second at most.
            if !self.locks_settled() {
                return None;
            }
            if self.writing_back() {
                let until = *self.restore_writes_until.get_or_insert(now.saturating_add(RESTORE_WRITE_WAIT_MS));
                if now < until {
                    return None;
                }
            }
            self.restore_writes_until = None;
            return Some(Effect::Done(self.restores.remove(0)));
        }
        if let Some(effect) = self.poll_send(now) {
            return Some(effect);
        }
        if let Some(effect) = self.poll_keep() {
            return Some(effect);
        }
        // Polling may have changed records (an upload whose bytes are gone
        // waits for the file; one without a URL renews): they are stored
        // before they act, and the driver must not sleep on them.
        self.poll_store(now).or_else(|| self.effects.pop_front()).or_else(|| self.poll_busy())
    }

    /// Says that [`Page::is_busy`] changed, once everything else was said
    /// (the app hears the attempts' own changes first).
    fn poll_busy(&mut self) -> Option<Effect> {
        let busy = self.is_busy();
        (busy != self.reported_busy).then(|| {
            self.reported_busy = busy;
            Effect::BusyChanged(busy)
        })
    }

    fn poll_store(&mut self, now: UnixMillis) -> Option<Effect> {
        if self.store_in_flight.is_some() {
            return None;
        }
        // An add waits on its write (nothing of it is sent before); a
        // forget, on its delete.
        if let Some((ticket, write)) = self.own_writes.first() {
            self.store_in_flight = Some(Writing::Own(*ticket));
            let (records, delete) = match write {
                OwnWrite::Add(plan) => (plan.new_records.clone(), Vec::new()),
                OwnWrite::Forget(id) => (Vec::new(), vec![*id]),
                OwnWrite::HandOver(ids) => {
                    (ids.iter().filter_map(|id| self.sched.record(id).cloned()).collect(), Vec::new())
                }
            };
            return Some(Effect::Store { records, delete, durability: Durability::Strict });
        }
        if !self.sched.has_dirty() || self.persist_retry_at.is_some_and(|t| t > now) {
            return None;
        }
        self.persist_retry_at = None;
        let records: Vec<AttemptRecord> =
            self.sched.take_dirty().iter().filter_map(|id| self.sched.record(id).cloned()).collect();
        if records.is_empty() {
            return None;
        }
        // A record never stored before (a successor) must be on disk before
        // its first request; later transitions only need the browser to have
        // them (a restore asks the server anyway).
        let durability = if records.iter().any(|r| r.revision == 1) { Durability::Strict } else { Durability::Relaxed };
        self.store_in_flight = Some(Writing::Records(records.clone()));
        Some(Effect::Store { records, delete: Vec::new(), durability })
    }

    fn poll_keep(&mut self) -> Option<Effect> {
        if self.keeping.in_flight.is_some() {
            return None;
        }
        // A file whose attempt finished before its turn needs no copy. (One
        // sorted list of the files still wanted, not a scan of every record
        // per queued file: a pick of a thousand photos polls this often.)
        if !self.keeping.queue.is_empty() {
            let mut wanted: Vec<Uuid> = self.sched.records().filter(|r| !r.is_terminal()).map(|r| r.blob_key).collect();
            wanted.sort_unstable();
            self.keeping.queue.retain(|(key, _)| wanted.binary_search(key).is_ok());
        }
        if self.keeping.queue.is_empty() || self.keeping.broken {
            self.keeping.queue.clear();
            return (!self.keeping.waiting.is_empty()).then(|| Effect::Done(self.keeping.waiting.remove(0)));
        }
        // Until this page has kept a file, one alone first (WebKit refusing
        // a Blob aborts a transaction of one request, but can leave one with
        // earlier requests pending forever); then batches.
        let take = if self.keeping.proven {
            let mut bytes = 0;
            let fits = self.keeping.queue.iter().take(KEEP_BATCH).take_while(|(_, size)| {
                bytes += size;
                bytes <= KEEP_BATCH_BYTES
            });
            fits.count().max(1)
        } else {
            1
        };
        let batch: Vec<(Uuid, u64)> = self.keeping.queue.drain(..take).collect();
        let keys = batch.iter().map(|(k, _)| *k).collect();
        self.keeping.in_flight = Some(batch);
        Some(Effect::KeepFiles(keys))
    }

    fn poll_send(&mut self, now: UnixMillis) -> Option<Effect> {
        loop {
            let command = self.sched.poll(now)?;
            if let Command::Upload { id, .. } | Command::Confirm { id, .. } = &command {
                self.effects.push_back(Effect::Changed(*id));
            }
            // Hashing is the page's own work, not a request: it needs no
            // session, so a file picked on a first visit is hashed while the
            // join is under way (its authorize then waits for the session).
            if !command.is_request() {
                return Some(Effect::Send { command, token: String::new() });
            }
            // An authorized attempt goes with its own session's token, even
            // one that lapsed (the server answers it about its attempts): no
            // join is needed to learn what became of it.
            let own_token = match &command {
                Command::Authorize { .. } => None,
                Command::Status { ids } => ids.first().and_then(|id| self.sched.record(id)),
                other => other.id().and_then(|id| self.sched.record(&id)),
            }
            .and_then(|r| r.session_token.clone());
            if let Some(token) = own_token {
                return Some(Effect::Send { command, token });
            }
            match &self.session {
                Some(session) => {
                    return Some(Effect::Send { command, token: session.token.clone() });
                }
                None => {
                    self.waiting_for_session.push(command);
                    if !self.joining {
                        self.joining = true;
                        return Some(Effect::Join { stale_token: self.stale_token.clone() });
                    }
                }
            }
        }
    }

    /// Requests that wait for the guest session (a join under way): each
    /// holds its slot of the concurrency limit meanwhile.
    pub fn requests_waiting_for_session(&self) -> usize {
        self.waiting_for_session.iter().filter(|c| c.is_request()).count()
    }

    /// When the page next has something to do by itself (a backoff ends, a
    /// failed write is due again), if ever.
    pub fn poll_timeout(&self) -> Option<UnixMillis> {
        if self.closed {
            return None;
        }
        // The restore's deadline only while it is what the restore waits
        // for: while a lock is still asked, the lock's answer wakes the page
        // (a deadline already past would wake it at once, again and again).
        let restore = self
            .restore_writes_until
            .filter(|_| !self.restores.is_empty() && self.locks_settled() && self.writing_back());
        [self.sched.next_wakeup(), self.persist_retry_at, restore].into_iter().flatten().min()
    }
}

/// The failure an outcome carries, if any.
fn outcome_failure(outcome: &Outcome) -> Option<&Failure> {
    match outcome {
        Outcome::Authorize(Err(f)) | Outcome::Renew(Err(f)) => Some(f),
        Outcome::Confirm(Err(f)) | Outcome::Upload(Err(f)) => Some(f),
        _ => None,
    }
}
