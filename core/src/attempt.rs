//! One upload attempt on the client: the record kept in IndexedDB and the
//! state machine that moves it.
//!
//! The machine is sans-IO. [`AttemptRecord::poll_action`] says what the
//! attempt needs next; the caller performs it and feeds the result back with
//! one of the `handle_*` methods. Time (`now`) and randomness (`jitter`) are
//! arguments, never read here.
//!
//! Three axes are kept apart, because they mean different things to a guest:
//! [`Transfer`] (did the bytes arrive), [`Confirmation`] (did the app accept
//! the media record) and [`ModerationView`] (did the host approve it).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ErrorCode;
use crate::multipart::{Ledger, PartFailure};
use crate::retry::{Disposition, Failure, Operation, RetryPolicy, classify};
use crate::time::UnixMillis;
use crate::wire::{
    AttemptResponse, AttemptState, AttemptStatus, AuthorizeRequest, ConfirmRequest, Media, MediaSummary, Moderation,
    Upload, UploadInstruction,
};

/// The record format written by this version.
pub const RECORD_VERSION: u32 = 1;

/// Where the bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Transfer {
    /// Not sent yet, or waiting to be sent again.
    Queued,
    /// Being sent now (progress is reported separately).
    Uploading,
    /// Stored in object storage.
    Uploaded,
    /// The bytes are not held any more: the guest must pick the file again.
    NeedsFile,
    /// Failed for good (see the error).
    Failed,
}

/// Whether the app accepted the media record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Confirmation {
    /// Not confirmed yet.
    Unconfirmed,
    /// A confirm request is in flight.
    Confirming,
    /// The media record exists.
    Confirmed,
    /// The server rejected it (the stored object contradicts the
    /// authorization).
    Rejected,
    /// The server expired the attempt before it was confirmed.
    Expired,
    /// Its bytes are stored, but it could not be confirmed (see the error:
    /// retries exhausted, cancelled before the confirm): Retry asks the
    /// server again.
    Failed,
}

/// Whether the host approved the media for the wall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ModerationView {
    /// No media record yet, so nothing to moderate.
    Unknown,
    /// Waiting for the host.
    Pending,
    /// On the wall.
    Approved,
    /// Not accepted by the host.
    Rejected,
}

impl From<Moderation> for ModerationView {
    fn from(m: Moderation) -> Self {
        match m {
            Moderation::Pending => ModerationView::Pending,
            Moderation::Approved => ModerationView::Approved,
            Moderation::Rejected => ModerationView::Rejected,
        }
    }
}

/// The protocol step an attempt waits to perform next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Ask the server to authorize the attempt (create-or-return).
    Authorize,
    /// PUT the bytes to the signed URL.
    Upload,
    /// Ask the server what became of the attempt.
    Check,
    /// Get a fresh signed URL.
    Renew,
    /// Confirm the attempt (create-or-return the media record).
    Confirm,
    /// Nothing: the attempt is terminal.
    Done,
}

macro_rules! text_enum {
    ($ty:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        impl $ty {
            /// The stable string form (as stored and shown to JS).
            pub const fn as_str(self) -> &'static str {
                match self { $( $ty::$variant => $text, )* }
            }

            /// Parses the stable string form.
            pub fn parse(text: &str) -> Option<$ty> {
                match text { $( $text => Some($ty::$variant), )* _ => None }
            }
        }
    };
}

text_enum!(Transfer { Queued = "queued", Uploading = "uploading", Uploaded = "uploaded", NeedsFile = "needs_file", Failed = "failed" });
text_enum!(Confirmation {
    Unconfirmed = "unconfirmed",
    Confirming = "confirming",
    Confirmed = "confirmed",
    Rejected = "rejected",
    Expired = "expired",
    Failed = "failed",
});
text_enum!(ModerationView { Unknown = "unknown", Pending = "pending", Approved = "approved", Rejected = "rejected" });
text_enum!(Step { Authorize = "authorize", Upload = "upload", Check = "check", Renew = "renew", Confirm = "confirm", Done = "done" });

/// The file an attempt uploads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// The file's name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Normalised content type.
    pub content_type: String,
    /// `File.lastModified` (milliseconds since the epoch).
    pub last_modified: i64,
}

impl FileInfo {
    /// Whether `other` is the same file as picked before: same name, size
    /// and modification time.
    pub fn same_file(&self, other: &FileInfo) -> bool {
        self.name == other.name && self.size == other.size && self.last_modified == other.last_modified
    }
}

/// Why a file's bytes are not kept in IndexedDB for a reload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum NotKept {
    /// Larger than `keepFileMaxBytes`.
    TooLarge,
    /// Keeping it would pass `keepFilesTotalBytes`.
    OverTotal,
    /// The browser's storage estimate leaves too little room.
    NoRoom,
    /// The browser refused to store it (a private window, a full disk).
    Refused,
}

impl NotKept {
    /// The stable text the view shows.
    pub const fn as_str(self) -> &'static str {
        match self {
            NotKept::TooLarge => "too_large",
            NotKept::OverTotal => "over_total",
            NotKept::NoRoom => "no_room",
            NotKept::Refused => "refused",
        }
    }
}

/// The last error of an attempt: terminal when the attempt is, transient
/// otherwise (then a retry is scheduled).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AttemptError {
    /// Stable code.
    pub code: String,
    /// Message for people.
    pub message: String,
}

/// What the attempt needs the caller to do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `POST /v1/events/{slug}/attempts` with this body.
    Authorize(AuthorizeRequest),
    /// PUT the bytes as instructed.
    Upload(UploadInstruction),
    /// `POST /v1/attempts/{id}/renew`.
    Renew,
    /// Send the missing parts of a multipart attempt (the scheduler's part
    /// pipeline says which, and how).
    Parts,
    /// `POST /v1/attempts/{id}/confirm` with this body.
    Confirm(ConfirmRequest),
    /// Ask for the attempt's status (batched by the scheduler).
    Check,
    /// Nothing until this time (a backoff).
    Wait(UnixMillis),
    /// Nothing: terminal, or waiting for the guest to pick the file again.
    Idle,
}

/// What the caller must do after a `handle_*` call, beyond storing the
/// record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Followup {
    /// Nothing more.
    None,
    /// The attempt expired while its bytes are still held: start a new
    /// attempt for the same file, linked to this one
    /// ([`AttemptRecord::successor`]).
    Successor,
}

/// The context a result is handled in.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    /// The current time.
    pub now: UnixMillis,
    /// A uniform random draw in `[0, 1)` for backoff jitter.
    pub jitter: f64,
    /// The retry policy.
    pub policy: &'a RetryPolicy,
    /// Whether the file's bytes are available (in memory or in IndexedDB).
    pub has_blob: bool,
    /// Whether the browser believes it is online. Network failures while
    /// offline do not count as retries.
    pub online: bool,
}

/// One attempt, as kept in IndexedDB.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Record format version.
    pub v: u32,
    /// The attempt id, minted when the guest picked the file.
    pub id: Uuid,
    /// The event slug.
    pub event: String,
    /// The file.
    pub file: FileInfo,
    /// The key under which the attempt's bytes are kept in IndexedDB: the id
    /// of the first attempt for this file (successors share it).
    pub blob_key: Uuid,
    /// Optional SHA-256 of the content.
    #[serde(default)]
    pub sha256: Option<String>,
    /// The server-generated object key, once authorized.
    #[serde(default)]
    pub object_key: Option<String>,
    /// The current signed upload URL (a single PUT).
    #[serde(default)]
    pub upload: Option<UploadInstruction>,
    /// The part ledger, when the server chose a multipart upload (large
    /// files). Left out of the stored record otherwise, so single-PUT
    /// records keep version 1's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipart: Option<Ledger>,
    /// When the server expires the attempt (RFC 3339), once authorized.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Transfer axis.
    pub transfer: Transfer,
    /// Confirmation axis.
    pub confirmation: Confirmation,
    /// Moderation axis.
    pub moderation: ModerationView,
    /// The media record, once confirmed.
    #[serde(default)]
    pub media: Option<MediaSummary>,
    /// The last error.
    #[serde(default)]
    pub error: Option<AttemptError>,
    /// Consecutive retryable failures so far.
    pub retries: u32,
    /// When the next retry may start.
    #[serde(default)]
    pub next_retry_at: Option<UnixMillis>,
    /// What the attempt does next.
    pub step: Step,
    /// When the record was created (the guest's action).
    pub created_at: UnixMillis,
    /// When the record last changed.
    pub updated_at: UnixMillis,
    /// Incremented on every change; lets a writer tell whether what it
    /// stored is still the latest.
    pub revision: u64,
    /// The expired attempt this one continues.
    #[serde(default)]
    pub replaces: Option<Uuid>,
    /// The attempt that continues this expired one.
    #[serde(default)]
    pub replaced_by: Option<Uuid>,
    /// The guest paused the transfer: nothing is sent until they resume
    /// (the server is still asked what became of it). Left out of the
    /// stored record when false, so version 1's format holds.
    #[serde(default, skip_serializing_if = "is_false")]
    pub paused: bool,
    /// The token of the guest session that authorized it: the attempt is
    /// asked about, renewed and confirmed with it, even after that session
    /// lapsed and the page joined again (the server answers for its own
    /// attempts). Left out of the stored record until authorized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_token: Option<String>,
    /// Why the file is not kept in IndexedDB for a reload, when the page
    /// that picked it could not keep it: stored with the record, so the
    /// reason reads the same after a reload. Left out when kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<NotKept>,
    /// Its bytes were handed to a driver outside the page (a Background
    /// Fetch, which goes on after the tab is closed): it is paused here, and
    /// the service worker confirms it when the fetch ends; a page that takes
    /// it back ([`AttemptRecord::take_back`]) drives it again. Left out of
    /// the stored record when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub background: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl AttemptRecord {
    /// A new attempt for a file the guest just picked.
    pub fn new(id: Uuid, event: &str, file: FileInfo, now: UnixMillis) -> Self {
        AttemptRecord {
            v: RECORD_VERSION,
            id,
            event: event.to_owned(),
            file,
            blob_key: id,
            sha256: None,
            object_key: None,
            upload: None,
            multipart: None,
            expires_at: None,
            transfer: Transfer::Queued,
            confirmation: Confirmation::Unconfirmed,
            moderation: ModerationView::Unknown,
            media: None,
            error: None,
            retries: 0,
            next_retry_at: None,
            step: Step::Authorize,
            created_at: now,
            updated_at: now,
            revision: 1,
            replaces: None,
            replaced_by: None,
            paused: false,
            session_token: None,
            not_kept: None,
            background: false,
        }
    }

    /// A new attempt continuing an expired one: same file and bytes, new id.
    pub fn successor(&self, id: Uuid, now: UnixMillis) -> Self {
        let mut next = AttemptRecord::new(id, &self.event, self.file.clone(), now);
        next.blob_key = self.blob_key;
        next.sha256 = self.sha256.clone();
        next.replaces = Some(self.id);
        // The guest's pause holds for the file, whichever attempt carries it.
        next.paused = self.paused;
        next
    }

    /// Whether nothing more will happen to this attempt by itself.
    pub fn is_terminal(&self) -> bool {
        self.step == Step::Done
    }

    /// Whether it ended in a failure the guest can retry: on the transfer
    /// axis (the bytes did not go up) or on the confirmation axis (they did,
    /// the confirm did not).
    pub fn has_failed(&self) -> bool {
        self.is_terminal() && (self.transfer == Transfer::Failed || self.confirmation == Confirmation::Failed)
    }

    /// Whether it waits for the guest to pick the file again.
    pub fn needs_file(&self) -> bool {
        self.transfer == Transfer::NeedsFile
    }

    /// Records the token of the guest session that authorized it; whether
    /// that changed it (a new revision, to be stored).
    pub fn set_session_token(&mut self, token: &str, now: UnixMillis) -> bool {
        if self.session_token.as_deref() == Some(token) {
            return false;
        }
        self.session_token = Some(token.to_owned());
        self.touch(now);
        true
    }

    fn touch(&mut self, now: UnixMillis) {
        if self.transfer == Transfer::Uploaded {
            // Nothing is left to pause once the bytes are stored.
            self.paused = false;
        }
        self.updated_at = now;
        self.revision += 1;
    }

    /// Says what the attempt needs now. May change the record (then its
    /// revision changes): an upload without a URL turns into a renew, a
    /// missing file into `needs_file`, and a file that came back into a queued
    /// transfer.
    pub fn poll_action(&mut self, now: UnixMillis, has_blob: bool) -> Action {
        if self.is_terminal() {
            return Action::Idle;
        }
        if self.needs_file() {
            if !has_blob {
                return Action::Idle;
            }
            self.attach_file(now);
        }
        if self.step == Step::Upload && !has_blob {
            self.transfer = Transfer::NeedsFile;
            self.error = Some(AttemptError {
                code: ErrorCode::NeedsFile.as_str().to_owned(),
                message: "the file is no longer available: please pick it again".to_owned(),
            });
            self.next_retry_at = None;
            self.touch(now);
            return Action::Idle;
        }
        if self.holds_back() {
            return Action::Idle;
        }
        if let Some(at) = self.next_retry_at {
            if at > now {
                return Action::Wait(at);
            }
        }
        match self.step {
            Step::Authorize => Action::Authorize(AuthorizeRequest {
                id: self.id,
                filename: self.file.name.clone(),
                size: self.file.size,
                content_type: self.file.content_type.clone(),
                sha256: self.sha256.clone(),
            }),
            Step::Upload => match &self.upload {
                // Expiry is the server's call (403 `url_expired`): the
                // client's clock may be wrong by hours.
                Some(upload) => Action::Upload(upload.clone()),
                None if self.multipart.is_some() => Action::Parts,
                None => {
                    self.step = Step::Renew;
                    self.touch(now);
                    Action::Renew
                }
            },
            Step::Renew => Action::Renew,
            Step::Confirm => Action::Confirm(ConfirmRequest {
                size: self.file.size,
                content_type: self.file.content_type.clone(),
                sha256: self.sha256.clone(),
                // The driver hashes the ledger's digests (WebCrypto) into it.
                composite_sha256: None,
            }),
            Step::Check => Action::Check,
            Step::Done => Action::Idle,
        }
    }

    /// Marks the start of an action, for display: `uploading` during a PUT,
    /// `confirming` during a confirm. Not a durable change.
    pub fn begin(&mut self, action: &Action) {
        match action {
            Action::Upload(_) => self.transfer = Transfer::Uploading,
            Action::Confirm(_) => self.confirmation = Confirmation::Confirming,
            _ => {}
        }
    }

    /// The guest picked the file again (or its bytes are held again).
    pub fn attach_file(&mut self, now: UnixMillis) -> bool {
        // A finished attempt (expired, rejected) takes no file: a new attempt
        // (or its successor) does.
        if !self.needs_file() || self.is_terminal() {
            return false;
        }
        self.transfer = Transfer::Queued;
        self.error = None;
        self.retries = 0;
        self.next_retry_at = None;
        // The store may have finished a part since (a PUT on the wire when
        // the page went away): the server is asked first, so no part it
        // holds is sent again. (A single PUT sends the same bytes to the
        // same key: harmless, and asked about if it fails.)
        if self.object_key.is_some() && self.multipart.is_some() {
            self.step = Step::Check;
        }
        self.touch(now);
        true
    }

    /// After a reload: every non-terminal attempt first asks the server what
    /// became of it, instead of guessing.
    pub fn restore(&mut self, now: UnixMillis) {
        if self.is_terminal() {
            return;
        }
        if self.transfer == Transfer::Uploading {
            self.transfer = Transfer::Queued;
        }
        if self.confirmation == Confirmation::Confirming {
            self.confirmation = Confirmation::Unconfirmed;
        }
        // A backoff chosen by a page that is gone does not bind this one:
        // asking the server costs one request. The retry budget is per page
        // visit too: transfers cut by the reload itself spent it, and only a
        // person reloading starts a new one, so nothing retries forever.
        if self.step != Step::Check || self.next_retry_at.is_some() || self.retries > 0 {
            self.step = Step::Check;
            self.next_retry_at = None;
            self.retries = 0;
            self.touch(now);
        }
    }

    /// The user cancelled. Returns false when the attempt is already
    /// confirmed, rejected or expired: those cannot be cancelled.
    pub fn cancel(&mut self, now: UnixMillis) -> bool {
        if matches!(self.confirmation, Confirmation::Confirmed | Confirmation::Rejected | Confirmation::Expired) {
            return false;
        }
        if self.has_failed() {
            return true;
        }
        self.fail(ErrorCode::Cancelled.as_str(), "cancelled".to_owned(), now);
        true
    }

    /// Whether the transfer can be paused now: the bytes are not stored
    /// yet and nothing has ended it.
    pub fn can_pause(&self) -> bool {
        !self.is_terminal()
            && matches!(self.transfer, Transfer::Queued | Transfer::Uploading)
            && self.confirmation == Confirmation::Unconfirmed
    }

    /// Whether the guest's pause holds the attempt back now: it holds the
    /// steps that send (authorize, the bytes, a new URL), never a question
    /// to the server or the confirm of bytes already stored.
    pub fn holds_back(&self) -> bool {
        self.paused && matches!(self.step, Step::Authorize | Step::Upload | Step::Renew)
    }

    /// The guest paused the transfer. The caller aborts what is being sent;
    /// the parts the store holds stay stored. Returns whether the attempt
    /// is paused (false once its bytes are stored or it ended).
    pub fn pause(&mut self, now: UnixMillis) -> bool {
        if self.paused {
            return true;
        }
        if !self.can_pause() {
            return false;
        }
        self.paused = true;
        self.touch(now);
        true
    }

    /// The guest resumed a paused transfer: it goes on at once, with a
    /// fresh retry budget (a person acted). Returns whether it was paused.
    pub fn resume(&mut self, now: UnixMillis) -> bool {
        if !self.paused {
            return false;
        }
        self.paused = false;
        self.retries = 0;
        self.next_retry_at = None;
        self.touch(now);
        true
    }

    /// Whether its bytes can be handed to a Background Fetch: a transfer in
    /// one PUT with its signed URL in hand, not paused, not sent yet (or
    /// being sent: the PUT starts again there).
    pub fn can_hand_over(&self) -> bool {
        self.can_pause()
            && !self.paused
            && self.multipart.is_none()
            && self.step == Step::Upload
            && self.upload.is_some()
    }

    /// Hands its bytes to a Background Fetch: it is paused here (the caller
    /// aborts what is being sent) and marked [`AttemptRecord::background`].
    /// False when it cannot be handed over.
    pub fn hand_over(&mut self, now: UnixMillis) -> bool {
        if !self.can_hand_over() {
            return false;
        }
        self.paused = true;
        self.background = true;
        self.touch(now);
        true
    }

    /// A page takes it back from a Background Fetch: it is driven here again
    /// from what the server says (the fetch may have stored its bytes), with
    /// a fresh retry budget. False when it was not handed over.
    pub fn take_back(&mut self, now: UnixMillis) -> bool {
        if !self.background {
            return false;
        }
        self.background = false;
        if self.paused {
            // Resumed as `resume` does, in this one revision.
            self.paused = false;
            self.retries = 0;
            self.next_retry_at = None;
        }
        if !self.is_terminal() && self.object_key.is_some() {
            self.step = Step::Check;
            self.next_retry_at = None;
        }
        self.touch(now);
        true
    }

    /// A PUT of the whole file ended because the guest paused: not a
    /// failure. It may have reached the store; sending the same bytes to
    /// the same key again on resume is harmless.
    pub fn upload_interrupted(&mut self) {
        if self.transfer == Transfer::Uploading {
            self.transfer = Transfer::Queued;
        }
    }

    /// A part's PUT ended because the guest paused: it may be stored, so
    /// the server's list decides before any part is sent again. Not a
    /// failure, not a retry.
    pub fn part_interrupted(&mut self, now: UnixMillis) {
        if self.is_terminal() {
            return;
        }
        if self.transfer == Transfer::Uploading {
            self.transfer = Transfer::Queued;
        }
        if self.step != Step::Check {
            self.step = Step::Check;
            self.next_retry_at = None;
            self.touch(now);
        }
    }

    /// The file's SHA-256, computed before the first authorize: sent with
    /// it, it lets the server find the same photo already stored (and binds
    /// the signed PUT to these bytes). False when it is too late (the
    /// server has seen the attempt) or already known.
    pub fn set_content_hash(&mut self, sha256: String, now: UnixMillis) -> bool {
        if self.sha256.is_some() || self.step != Step::Authorize || self.object_key.is_some() {
            return false;
        }
        self.sha256 = Some(sha256);
        self.touch(now);
        true
    }

    /// Whether its bytes were already stored in the event (the same photo,
    /// from this guest or another): confirmed without a transfer, pointing
    /// to the existing media.
    pub fn is_duplicate(&self) -> bool {
        self.media.as_ref().is_some_and(|m| m.duplicate)
    }

    /// The user asked to try again. Only a failed (or cancelled) attempt
    /// moves; an active one is left alone, so a double click does nothing
    /// twice. Returns whether anything changed.
    pub fn retry(&mut self, now: UnixMillis) -> bool {
        let transfer_failed = self.transfer == Transfer::Failed && self.confirmation == Confirmation::Unconfirmed;
        let confirm_failed = self.confirmation == Confirmation::Failed;
        if !transfer_failed && !confirm_failed {
            return false;
        }
        if transfer_failed {
            self.transfer = Transfer::Queued;
        }
        self.confirmation = Confirmation::Unconfirmed;
        self.error = None;
        self.retries = 0;
        self.next_retry_at = None;
        // The server is the source of truth: ask before doing anything.
        self.step = if self.object_key.is_some() { Step::Check } else { Step::Authorize };
        self.touch(now);
        true
    }

    /// Why the page could not keep the file for a reload (`None`: kept, or
    /// not yet decided). Returns whether it changed.
    /// (An explanation, not a step: `updated_at` stays.)
    pub fn set_not_kept(&mut self, why: Option<NotKept>) -> bool {
        if self.not_kept == why {
            return false;
        }
        self.not_kept = why;
        self.revision += 1;
        true
    }

    /// The browser could not read the file held for this attempt: it ends
    /// `file_unreadable` (the guest picks the file again), unless it
    /// already ended.
    pub fn file_unreadable(&mut self, now: UnixMillis) {
        if !self.is_terminal() {
            let failure = Failure::FileUnreadable;
            self.fail(&failure.code(), failure.message(), now);
        }
    }

    /// Ends the attempt in a failure, on the axis it belongs to: once the
    /// bytes are stored, the transfer stays `uploaded` and the confirmation
    /// shows the failure.
    fn fail(&mut self, code: &str, message: String, now: UnixMillis) {
        if self.transfer == Transfer::Uploaded {
            self.confirmation = Confirmation::Failed;
        } else {
            self.transfer = Transfer::Failed;
            if self.confirmation == Confirmation::Confirming {
                self.confirmation = Confirmation::Unconfirmed;
            }
        }
        self.error = Some(AttemptError { code: code.to_owned(), message });
        self.next_retry_at = None;
        self.step = Step::Done;
        self.touch(now);
    }

    fn expire(&mut self, env: &Env<'_>) -> Followup {
        self.confirmation = Confirmation::Expired;
        if self.transfer == Transfer::Uploading {
            self.transfer = Transfer::Queued;
        }
        self.error = Some(AttemptError {
            code: ErrorCode::Expired.as_str().to_owned(),
            message: "the server expired this upload before it was confirmed".to_owned(),
        });
        self.next_retry_at = None;
        self.step = Step::Done;
        self.touch(env.now);
        if env.has_blob { Followup::Successor } else { Followup::None }
    }

    fn reject(&mut self, code: String, reason: String, now: UnixMillis) {
        self.confirmation = Confirmation::Rejected;
        self.error = Some(AttemptError { code, message: reason });
        self.next_retry_at = None;
        self.step = Step::Done;
        self.touch(now);
    }

    fn confirmed(&mut self, media: MediaSummary, now: UnixMillis) {
        self.transfer = Transfer::Uploaded;
        self.confirmation = Confirmation::Confirmed;
        self.moderation = media.moderation.into();
        self.media = Some(media);
        self.error = None;
        self.retries = 0;
        self.next_retry_at = None;
        self.upload = None;
        self.step = Step::Done;
        self.touch(now);
    }

    /// Applies the retry policy to a failure in `op`, and returns what to do.
    fn on_failure(&mut self, op: Operation, failure: Failure, env: &Env<'_>) -> Followup {
        if self.transfer == Transfer::Uploading {
            self.transfer = Transfer::Queued;
        }
        if self.confirmation == Confirmation::Confirming {
            self.confirmation = Confirmation::Unconfirmed;
        }
        let disposition = classify(op, &failure);
        let error = AttemptError { code: failure.code(), message: failure.message() };
        // While offline, a network failure is expected: pause without
        // spending a retry; the caller resumes when the browser is online.
        let paused = failure == Failure::Network && !env.online;
        let next_step = match disposition {
            Disposition::Retry { .. } => self.step,
            Disposition::Check => Step::Check,
            Disposition::Renew => Step::Renew,
            Disposition::Confirm => {
                self.transfer = Transfer::Uploaded;
                Step::Confirm
            }
            Disposition::Expired => return self.expire(env),
            Disposition::Rejected => {
                self.reject(error.code, error.message, env.now);
                return Followup::None;
            }
            Disposition::Fail => {
                self.fail(&error.code, error.message, env.now);
                return Followup::None;
            }
        };
        if !paused {
            if self.retries >= env.policy.max_retries {
                let message = format!("gave up after {} retries: {}", self.retries, error.message);
                self.fail(ErrorCode::RetriesExhausted.as_str(), message, env.now);
                return Followup::None;
            }
            let min_delay = match disposition {
                Disposition::Retry { min_delay_ms } => min_delay_ms,
                _ => 0,
            };
            // A renew or a jump to confirm is a new step, not a repeat: no wait.
            let delay = match disposition {
                Disposition::Renew | Disposition::Confirm => 0,
                _ => env.policy.delay_ms(self.retries, env.jitter, min_delay),
            };
            self.next_retry_at = Some(env.now + delay as i64);
            self.retries += 1;
        }
        self.step = next_step;
        self.error = Some(error);
        self.touch(env.now);
        Followup::None
    }

    fn progressed(&mut self) {
        self.error = None;
        self.retries = 0;
        self.next_retry_at = None;
    }

    fn apply_attempt(&mut self, attempt: AttemptResponse, env: &Env<'_>) -> Followup {
        self.object_key = Some(attempt.object_key);
        self.expires_at = Some(attempt.expires_at);
        match attempt.state {
            AttemptState::Authorized => {
                match attempt.upload {
                    Some(Upload::Multipart(plan)) => {
                        self.upload = None;
                        // A renew answers the same plan: the parts done stay.
                        let same = self
                            .multipart
                            .as_ref()
                            .is_some_and(|l| l.part_size == plan.part_size && l.part_count == plan.part_count);
                        if !same {
                            self.multipart = Some(Ledger::new(&plan));
                        }
                        if self.multipart.as_ref().is_some_and(Ledger::is_complete) {
                            self.transfer = Transfer::Uploaded;
                            self.step = Step::Confirm;
                            self.touch(env.now);
                            return Followup::None;
                        }
                    }
                    Some(Upload::Put(instruction)) => {
                        self.upload = Some(instruction);
                        self.multipart = None;
                    }
                    None => self.upload = None,
                }
                self.step = Step::Upload;
                self.touch(env.now);
                Followup::None
            }
            AttemptState::Confirmed => match attempt.media {
                Some(media) => {
                    self.confirmed(media, env.now);
                    Followup::None
                }
                None => {
                    self.step = Step::Check;
                    self.touch(env.now);
                    Followup::None
                }
            },
            AttemptState::Expired => self.expire(env),
            AttemptState::Rejected => {
                let r = attempt.rejection.unwrap_or(crate::wire::Rejection {
                    code: "rejected".to_owned(),
                    reason: "the server rejected this upload".to_owned(),
                });
                self.reject(r.code, r.reason, env.now);
                Followup::None
            }
        }
    }

    /// The answer to `authorize`.
    pub fn handle_authorize(&mut self, result: Result<AttemptResponse, Failure>, env: &Env<'_>) -> Followup {
        match result {
            Ok(attempt) => {
                self.progressed();
                self.apply_attempt(attempt, env)
            }
            Err(failure) => self.on_failure(Operation::Authorize, failure, env),
        }
    }

    /// The answer to the PUT.
    pub fn handle_upload(&mut self, result: Result<(), Failure>, env: &Env<'_>) -> Followup {
        match result {
            Ok(()) => {
                // Not a fresh retry budget: a store that accepts the bytes but
                // never shows them to confirm must not loop forever.
                self.error = None;
                self.next_retry_at = None;
                self.transfer = Transfer::Uploaded;
                self.step = Step::Confirm;
                self.touch(env.now);
                Followup::None
            }
            Err(failure) => self.on_failure(Operation::Upload, failure, env),
        }
    }

    /// The answer to `renew`. A successful renew does not reset the retry
    /// count: a URL that is refused again and again must not loop forever.
    pub fn handle_renew(&mut self, result: Result<AttemptResponse, Failure>, env: &Env<'_>) -> Followup {
        match result {
            Ok(attempt) => {
                self.next_retry_at = None;
                self.apply_attempt(attempt, env)
            }
            Err(failure) => self.on_failure(Operation::Renew, failure, env),
        }
    }

    /// Part `number` of a multipart attempt is stored (with its hash): the
    /// ledger says so, and once every part is, the attempt confirms.
    pub fn part_stored(&mut self, number: u32, sha256: Option<String>, now: UnixMillis) {
        let Some(ledger) = &mut self.multipart else {
            return;
        };
        ledger.mark_done(number, sha256);
        let complete = ledger.is_complete();
        // Progress: the consecutive failures start again.
        self.error = None;
        self.retries = 0;
        if complete {
            self.transfer = Transfer::Uploaded;
            self.step = Step::Confirm;
            self.next_retry_at = None;
        }
        self.touch(now);
    }

    /// A part of a multipart attempt failed: a retry of the attempt (it gives
    /// up after the policy's limit), a check with the server, a wait for the
    /// file, or the end.
    pub fn part_failed(&mut self, failure: PartFailure, error: Option<&Failure>, env: &Env<'_>) {
        if self.is_terminal() {
            return;
        }
        let info = error.map(|f| AttemptError { code: f.code(), message: f.message() });
        match failure {
            PartFailure::Retry { .. } => {
                if error == Some(&Failure::Network) && !env.online {
                    // Offline: a pause, not a retry.
                } else if self.retries >= env.policy.max_retries {
                    let message = format!(
                        "gave up after {} retries: {}",
                        self.retries,
                        info.map(|e| e.message).unwrap_or_default()
                    );
                    self.fail(ErrorCode::RetriesExhausted.as_str(), message, env.now);
                    return;
                } else {
                    self.retries += 1;
                }
                self.error = info;
                self.touch(env.now);
            }
            PartFailure::Check => {
                if self.transfer == Transfer::Uploading {
                    self.transfer = Transfer::Queued;
                }
                self.error = info;
                self.step = Step::Check;
                self.next_retry_at = Some(env.now + env.policy.delay_ms(self.retries, env.jitter, 0) as i64);
                self.retries += 1;
                self.touch(env.now);
            }
            PartFailure::FileGone => {
                self.transfer = Transfer::NeedsFile;
                self.error = Some(AttemptError {
                    code: ErrorCode::NeedsFile.as_str().to_owned(),
                    message: "the file is no longer available: please pick it again".to_owned(),
                });
                self.next_retry_at = None;
                self.touch(env.now);
            }
            PartFailure::Fail(f) => self.fail(&f.code(), f.message(), env.now),
        }
    }

    /// The answer to `confirm`.
    pub fn handle_confirm(&mut self, result: Result<Media, Failure>, env: &Env<'_>) -> Followup {
        match result {
            Ok(media) => {
                self.confirmed(MediaSummary::for_attempt(&media, self.id), env.now);
                Followup::None
            }
            Err(failure) => self.on_failure(Operation::Confirm, failure, env),
        }
    }

    /// A confirm answered after the user cancelled: the media record exists,
    /// so the attempt is confirmed after all (never a hidden duplicate).
    pub fn adopt_confirmation(&mut self, media: Media, env: &Env<'_>) {
        if self.confirmation != Confirmation::Confirmed && self.has_failed() {
            self.confirmed(MediaSummary::for_attempt(&media, self.id), env.now);
        }
    }

    /// The server's answer about this attempt (restore, or an ambiguous
    /// failure): act on the truth instead of guessing.
    pub fn handle_status(&mut self, result: Result<AttemptStatus, Failure>, env: &Env<'_>) -> Followup {
        let status = match result {
            Ok(status) => status,
            // A failed moderation refresh changes nothing about a finished
            // attempt (it is asked again on the next refresh).
            Err(_) if self.is_terminal() => return Followup::None,
            Err(failure) => return self.on_failure(Operation::Status, failure, env),
        };
        // The check itself succeeded: its backoff is over.
        self.next_retry_at = None;
        if self.confirmation == Confirmation::Confirmed {
            // A moderation refresh of a finished attempt.
            if let AttemptStatus::Confirmed { media, .. } = status {
                if self.media.as_ref() != Some(&media) {
                    self.moderation = media.moderation.into();
                    self.media = Some(media);
                    self.touch(env.now);
                }
            }
            return Followup::None;
        }
        if self.has_failed() {
            // Failed here (retries exhausted, cancelled with a confirm on the
            // wire), but the server may have finished it: show what it says.
            match status {
                AttemptStatus::Confirmed { media, .. } => self.confirmed(media, env.now),
                AttemptStatus::Rejected { code, reason, .. } => self.reject(code, reason, env.now),
                AttemptStatus::Expired { .. } if self.confirmation != Confirmation::Expired => {
                    self.confirmation = Confirmation::Expired;
                    if self.transfer == Transfer::Failed {
                        self.transfer = Transfer::Queued;
                    }
                    self.touch(env.now);
                }
                // Still open, or unknown: it stays failed, and Retry goes on.
                _ => {}
            }
            return Followup::None;
        }
        if self.is_terminal() {
            return Followup::None;
        }
        match status {
            AttemptStatus::Authorized { parts: Some(parts), expires_at, .. } => {
                // A multipart attempt: the store's own list of parts wins
                // over what this browser remembered.
                self.expires_at = Some(expires_at);
                let size = self.file.size;
                match &mut self.multipart {
                    Some(ledger) => {
                        ledger.reconcile(&parts, size);
                        if ledger.is_complete() {
                            self.transfer = Transfer::Uploaded;
                            self.step = Step::Confirm;
                        } else {
                            if self.transfer == Transfer::Uploaded {
                                self.transfer = Transfer::Queued;
                            }
                            self.step = Step::Upload;
                        }
                    }
                    // The plan itself was never stored here: a renew brings it.
                    None => self.step = Step::Renew,
                }
                self.touch(env.now);
                Followup::None
            }
            AttemptStatus::Authorized { object_stored, expires_at, .. } => {
                self.expires_at = Some(expires_at);
                if object_stored {
                    self.transfer = Transfer::Uploaded;
                    self.step = Step::Confirm;
                } else {
                    if self.transfer == Transfer::Uploaded {
                        self.transfer = Transfer::Queued;
                    }
                    // The URL we hold may be long expired (a reload days
                    // later): get a fresh one rather than send bytes to be
                    // refused.
                    self.upload = None;
                    self.step = Step::Upload;
                }
                self.touch(env.now);
                Followup::None
            }
            AttemptStatus::Confirmed { media, .. } => {
                self.confirmed(media, env.now);
                Followup::None
            }
            AttemptStatus::Expired { .. } => self.expire(env),
            AttemptStatus::Rejected { code, reason, .. } => {
                self.reject(code, reason, env.now);
                Followup::None
            }
            AttemptStatus::NotFound { .. } if self.object_key.is_none() => {
                // The authorize never committed: authorize again, same id.
                self.step = Step::Authorize;
                self.touch(env.now);
                Followup::None
            }
            AttemptStatus::NotFound { .. } => {
                self.fail(
                    ErrorCode::NotFound.as_str(),
                    "the server does not know this upload (another guest session?)".to_owned(),
                    env.now,
                );
                Followup::None
            }
        }
    }
}
