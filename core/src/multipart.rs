//! Large files go up in parts, through the same attempt.
//!
//! - [`Ledger`]: which parts the object store holds, kept with the attempt
//!   in IndexedDB as parts complete. After a reload it is replaced by the
//!   store's own list (the server's status): the server wins.
//! - [`Pipeline`]: what the page does with the parts still missing — hash
//!   each one (WebCrypto, over that part's bytes only), have a batch signed,
//!   PUT them, at most `parallelism` parts at once — and how a part's
//!   failure is retried. It lives only in memory; a reload rebuilds it from
//!   the ledger.

use serde::{Deserialize, Serialize};

use crate::retry::{Disposition, Failure, Operation, RetryPolicy, classify};
use crate::time::UnixMillis;
use crate::wire::{MAX_PARTS_PER_REQUEST, MultipartPlan, PartRequest, PartsResponse, StoredPart, UploadInstruction};

/// Parts of one file in flight at once, by default.
pub const DEFAULT_PARALLELISM: usize = 3;

/// A part the store holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartDone {
    /// The part number, 1-based.
    pub number: u32,
    /// Its SHA-256, when known.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// The part ledger of a multipart attempt, stored with its record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Bytes per part (the last one shorter).
    pub part_size: u64,
    /// How many parts.
    pub part_count: u32,
    /// The parts the store holds, sorted by number, each once.
    pub done: Vec<PartDone>,
    /// The SHA-256 of part 1: the file's identity when it is picked again
    /// (same name, size and time are not enough to splice bytes together).
    #[serde(default)]
    pub first_part_sha256: Option<String>,
}

impl Ledger {
    /// A fresh ledger for the server's plan.
    pub fn new(plan: &MultipartPlan) -> Ledger {
        Ledger { part_size: plan.part_size, part_count: plan.part_count, done: Vec::new(), first_part_sha256: None }
    }

    /// The plan this ledger follows.
    pub fn plan(&self) -> MultipartPlan {
        MultipartPlan { part_size: self.part_size, part_count: self.part_count, expires_at: String::new() }
    }

    /// The byte range `[start, end)` of part `number` of a file of `size`
    /// bytes.
    pub fn range(&self, number: u32, size: u64) -> (u64, u64) {
        self.plan().range(number, size)
    }

    /// Whether the store holds part `number`. (`done` is kept sorted by
    /// number, each once: a binary search, not a scan of up to 10,000.)
    pub fn is_done(&self, number: u32) -> bool {
        self.done.get(self.position(number)).is_some_and(|p| p.number == number)
    }

    /// Where part `number` is, or would be, in `done`.
    fn position(&self, number: u32) -> usize {
        self.done.partition_point(|p| p.number < number)
    }

    /// Whether the store holds every part.
    pub fn is_complete(&self) -> bool {
        self.first_missing() > self.part_count
    }

    /// The first part the store does not hold (`part_count + 1` when it
    /// holds them all): a binary search, as parts `1..=k` are done exactly
    /// when `done[k - 1]` is part `k`.
    pub fn first_missing(&self) -> u32 {
        let (mut at, mut end) = (0, self.done.len());
        while at < end {
            let mid = at + (end - at) / 2;
            if self.done[mid].number as usize == mid + 1 {
                at = mid + 1;
            } else {
                end = mid;
            }
        }
        at as u32 + 1
    }

    /// Bytes of the parts the store holds.
    pub fn bytes_done(&self, size: u64) -> u64 {
        self.done.iter().map(|p| self.range(p.number, size)).map(|(a, b)| b - a).sum()
    }

    /// What the composite checksum of the file is the SHA-256 of: every
    /// part's raw 32-byte digest, in part order, with the part count; `None`
    /// unless every part is stored with a known digest. The driver hashes
    /// it and sends `{hex}-{count}` with the confirm
    /// ([`crate::wire::ConfirmRequest::composite_sha256`]).
    pub fn composite_input(&self) -> Option<(Vec<u8>, u32)> {
        if !self.is_complete() {
            return None;
        }
        let mut raw = Vec::with_capacity(self.part_count as usize * 32);
        for part in self.done.iter().take(self.part_count as usize) {
            let hex = part.sha256.as_deref().filter(|h| h.len() == 64)?;
            for pair in hex.as_bytes().chunks(2) {
                raw.push(u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?);
            }
        }
        Some((raw, self.part_count))
    }

    /// Records a part as stored.
    pub fn mark_done(&mut self, number: u32, sha256: Option<String>) {
        if number == 1 && sha256.is_some() {
            self.first_part_sha256.clone_from(&sha256);
        }
        let at = self.position(number);
        match self.done.get_mut(at).filter(|p| p.number == number) {
            Some(p) => p.sha256 = sha256.or(p.sha256.take()),
            None => self.done.insert(at, PartDone { number, sha256 }),
        }
    }

    /// Takes the store's own list: the parts it holds with their exact
    /// length are done, nothing else is (the server wins over what this
    /// browser remembered).
    pub fn reconcile(&mut self, stored: &[StoredPart], size: u64) {
        let mut done: Vec<PartDone> = stored
            .iter()
            .filter(|p| (1..=self.part_count).contains(&p.number))
            .filter(|p| {
                let (a, b) = self.range(p.number, size);
                p.size == b - a
            })
            .map(|p| PartDone { number: p.number, sha256: p.sha256.clone() })
            .collect();
        done.sort_by_key(|p| p.number);
        done.dedup_by_key(|p| p.number);
        if let Some(first) = done.iter().find(|p| p.number == 1).and_then(|p| p.sha256.clone()) {
            self.first_part_sha256 = Some(first);
        }
        self.done = done;
    }
}

/// What one missing part is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PartState {
    /// Its bytes are being hashed.
    Hashing,
    /// Hashed; waits to be signed.
    Hashed { sha256: String },
    /// In a sign request.
    Signing { sha256: String },
    /// Has a URL; waits to be sent.
    Signed { sha256: String, upload: UploadInstruction },
    /// Being sent.
    Sending { sha256: String, upload: UploadInstruction },
}

impl PartState {
    fn sha256(&self) -> Option<&str> {
        match self {
            PartState::Hashing => None,
            PartState::Hashed { sha256 }
            | PartState::Signing { sha256 }
            | PartState::Signed { sha256, .. }
            | PartState::Sending { sha256, .. } => Some(sha256),
        }
    }
}

/// What a multipart attempt asks the caller to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartAction {
    /// Hash the file's bytes `[start, end)` (SHA-256, hex); answer
    /// [`Pipeline::handle_hashed`].
    Hash {
        /// The part number.
        number: u32,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// Sign these parts (`POST /v1/attempts/{id}/parts`); answer
    /// [`Pipeline::handle_signed`].
    Sign(Vec<PartRequest>),
    /// PUT the file's bytes `[start, end)` as instructed; answer
    /// [`Pipeline::handle_sent`].
    Send {
        /// The part number.
        number: u32,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// The signed URL and headers.
        upload: UploadInstruction,
    },
}

/// What came of a part's failure, for the attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartFailure {
    /// Retried after `delay_ms`; counts as a retry of the attempt.
    Retry {
        /// The backoff.
        delay_ms: u64,
    },
    /// Ask the server what became of the attempt (it may have ended).
    Check,
    /// The file's bytes could not be read: the attempt waits for the file.
    FileGone,
    /// Whatever it is, the attempt ends with this failure.
    Fail(Failure),
}

/// The parts of one attempt on their way, in memory only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pipeline {
    parts: Vec<(u32, PartState)>,
    /// A sign request is in flight.
    signing: bool,
    /// Nothing new starts; what is on the wire finishes, then the attempt
    /// asks the server (or waits for its file) and the pipeline starts
    /// over from the ledger.
    draining: bool,
    /// Parts waiting for their backoff to end: (number, not before).
    waiting: Vec<(u32, UnixMillis)>,
    /// Bytes sent so far of each part being sent.
    sent: Vec<(u32, f64)>,
}

impl Pipeline {
    fn state(&self, number: u32) -> Option<&PartState> {
        self.parts.iter().find(|(n, _)| *n == number).map(|(_, s)| s)
    }

    fn set(&mut self, number: u32, state: PartState) {
        match self.parts.iter_mut().find(|(n, _)| *n == number) {
            Some(entry) => entry.1 = state,
            None => self.parts.push((number, state)),
        }
    }

    fn drop_part(&mut self, number: u32) {
        self.parts.retain(|(n, _)| *n != number);
        self.sent.retain(|(n, _)| *n != number);
        self.waiting.retain(|(n, _)| *n != number);
    }

    /// Requests of this pipeline on the network now (a sign request, parts
    /// being sent).
    pub fn requests_in_flight(&self) -> usize {
        usize::from(self.signing) + self.parts.iter().filter(|(_, s)| matches!(s, PartState::Sending { .. })).count()
    }

    /// Whether anything is being done (hashed, signed or sent).
    pub fn is_busy(&self) -> bool {
        self.signing || self.parts.iter().any(|(_, s)| matches!(s, PartState::Hashing | PartState::Sending { .. }))
    }

    /// Nothing new starts: what is on the wire finishes, then the pipeline
    /// starts over from the ledger (the guest paused).
    pub fn stop(&mut self) {
        self.draining = true;
        self.waiting.clear();
    }

    /// Forgets every part on its way (a reload, a cancel, the file gone).
    pub fn reset(&mut self) {
        *self = Pipeline::default();
    }

    /// Bytes sent so far of the parts being sent.
    pub fn bytes_in_flight(&self) -> f64 {
        self.sent.iter().map(|(_, b)| *b).sum()
    }

    /// Upload progress of a part being sent.
    pub fn progress(&mut self, number: u32, sent: f64) {
        if matches!(self.state(number), Some(PartState::Sending { .. })) {
            match self.sent.iter_mut().find(|(n, _)| *n == number) {
                Some(entry) => entry.1 = sent,
                None => self.sent.push((number, sent)),
            }
        }
    }

    /// When a part waiting out its backoff may go again, if any waits.
    pub fn next_wakeup(&self) -> Option<UnixMillis> {
        self.waiting.iter().map(|(_, t)| *t).min()
    }

    /// The next thing to do for `ledger`'s missing parts: hash one (one at
    /// a time, at most three times `parallelism` parts on their way), sign
    /// what is hashed (one request at a time, a set of parts each), send
    /// what is signed. `network` says whether a
    /// part's PUT may start now (the page's concurrency limit); `sign`
    /// whether a sign request may (it may go beside a full set of PUTs, so
    /// the next parts are signed while the current ones are on the wire,
    /// and a slot that frees is taken at once, never after a round trip).
    pub fn poll(
        &mut self,
        ledger: &Ledger,
        size: u64,
        parallelism: usize,
        (network, sign): (bool, bool),
        now: UnixMillis,
    ) -> Option<PartAction> {
        if self.draining {
            if self.is_busy() {
                return None;
            }
            // Drained, and the attempt is back to its parts: start over from
            // the ledger (which the server's list has just set).
            self.reset();
        }
        self.waiting.retain(|(_, t)| *t > now);
        let parallelism = parallelism.max(1);
        let count = |pred: fn(&PartState) -> bool| self.parts.iter().filter(|(_, s)| pred(s)).count();
        let sending = count(|s| matches!(s, PartState::Sending { .. }));
        let hashing = count(|s| *s == PartState::Hashing);
        if network && sending < parallelism {
            // Send what is signed first: it frees the most.
            let ready = self.parts.iter().find_map(|(n, s)| match s {
                PartState::Signed { sha256, upload } => Some((*n, sha256.clone(), upload.clone())),
                _ => None,
            });
            if let Some((number, sha256, upload)) = ready {
                let (start, end) = ledger.range(number, size);
                self.set(number, PartState::Sending { sha256, upload: upload.clone() });
                return Some(PartAction::Send { number, start, end, upload });
            }
        }
        // At most `parallelism` parts are sent at once. Sending holds no
        // bytes in memory (the browser streams a Blob slice); hashing does:
        // one part of the file is hashed at a time (its bytes alone are in
        // memory). At most three times `parallelism` parts are on their way
        // (a hashed part holds only its digest): a set on the wire, a set
        // signed for the slots that free, a set hashed for the next sign
        // request, so signing ahead goes a set at a time and never leaves a
        // slot waiting. The next hash starts before a sign request is
        // considered, so that one waits for a set while more can be hashed.
        let may_hash = hashing == 0 && self.parts.len() < 3 * parallelism;
        if let Some(next) = may_hash.then(|| self.next_to_hash(ledger)).flatten() {
            let (start, end) = ledger.range(next, size);
            self.set(next, PartState::Hashing);
            return Some(PartAction::Hash { number: next, start, end });
        }
        // A sign request asks for the parts hashed so far: at once when a
        // free slot has no signed part to send, else once a full set is
        // hashed (or the last parts are: nothing is left to hash), so that
        // signing ahead does not cost a request per part.
        let hashed = count(|s| matches!(s, PartState::Hashed { .. }));
        let signed = count(|s| matches!(s, PartState::Signed { .. }));
        let starving = network && signed == 0 && sending < parallelism;
        // (Nothing is left to hash: known without a second look when the
        // pipeline has just looked for a part to hash.)
        let last_parts = || hashing == 0 && (may_hash || self.next_to_hash(ledger).is_none());
        if sign && !self.signing && (starving || hashed >= parallelism || last_parts()) {
            {
                let batch: Vec<PartRequest> = self
                    .parts
                    .iter()
                    .filter_map(|(n, s)| match s {
                        // No hash where the browser has no WebCrypto.
                        PartState::Hashed { sha256 } => {
                            Some(PartRequest { number: *n, sha256: Some(sha256.clone()).filter(|s| !s.is_empty()) })
                        }
                        _ => None,
                    })
                    .take(MAX_PARTS_PER_REQUEST)
                    .collect();
                if !batch.is_empty() {
                    for p in &batch {
                        let sha256 = p.sha256.clone().unwrap_or_default();
                        self.set(p.number, PartState::Signing { sha256 });
                    }
                    self.signing = true;
                    return Some(PartAction::Sign(batch));
                }
            }
        }
        None
    }

    /// The first part not stored, not on its way and not waiting out a
    /// backoff: the next to hash.
    fn next_to_hash(&self, ledger: &Ledger) -> Option<u32> {
        // From the first hole on: the parts after it are mostly on their
        // way or not yet started, so this looks at a few, not at every part
        // number of a file of up to 10,000.
        (ledger.first_missing()..=ledger.part_count)
            .find(|n| !ledger.is_done(*n) && self.state(*n).is_none() && !self.waiting.iter().any(|(w, _)| w == n))
    }

    /// A part's hash, or why its bytes could not be read (the file is gone:
    /// the attempt waits for it).
    pub fn handle_hashed(&mut self, number: u32, result: Result<String, Failure>) -> Option<PartFailure> {
        if self.state(number) != Some(&PartState::Hashing) {
            return None;
        }
        match result {
            Ok(sha256) => {
                self.set(number, PartState::Hashed { sha256 });
                None
            }
            Err(failure) => {
                self.drop_part(number);
                self.draining = true;
                // A file held here that the browser refuses to read is named
                // as such; bytes that are simply gone are asked for again.
                Some(match failure {
                    Failure::FileUnreadable => PartFailure::Fail(failure),
                    _ => PartFailure::FileGone,
                })
            }
        }
    }

    /// The signed URLs of the batch in flight, or why none came.
    pub fn handle_signed(
        &mut self,
        result: Result<PartsResponse, Failure>,
        policy: &RetryPolicy,
        retries: u32,
        jitter: f64,
        now: UnixMillis,
    ) -> Option<PartFailure> {
        if !self.signing {
            return None;
        }
        self.signing = false;
        let signing: Vec<(u32, String)> = self
            .parts
            .iter()
            .filter_map(|(n, s)| match s {
                PartState::Signing { sha256 } => Some((*n, sha256.clone())),
                _ => None,
            })
            .collect();
        match result {
            Ok(response) => {
                for (number, sha256) in signing {
                    match response.parts.iter().find(|p| p.number == number) {
                        Some(p) => self.set(number, PartState::Signed { sha256, upload: p.upload.clone() }),
                        // Left out of the answer: asked again.
                        None => self.set(number, PartState::Hashed { sha256 }),
                    }
                }
                None
            }
            Err(failure) => {
                for (number, sha256) in signing {
                    self.set(number, PartState::Hashed { sha256 });
                }
                Some(self.part_failure(Operation::Renew, failure, None, policy, retries, jitter, now))
            }
        }
    }

    /// A part's PUT could not start: its bytes could not be read. True
    /// when it held a request slot (it had been handed out to be sent).
    pub fn handle_unreadable(&mut self, number: u32) -> bool {
        let was_sending = matches!(self.state(number), Some(PartState::Sending { .. }));
        self.drop_part(number);
        self.draining = true;
        was_sending
    }

    /// A part was sent: stored (then the caller marks it done in the
    /// ledger, with its hash), or failed.
    pub fn handle_sent(
        &mut self,
        number: u32,
        result: Result<(), Failure>,
        policy: &RetryPolicy,
        retries: u32,
        jitter: f64,
        now: UnixMillis,
    ) -> Result<Option<String>, PartFailure> {
        let Some(PartState::Sending { sha256, .. }) = self.state(number).cloned() else {
            return Ok(None);
        };
        match result {
            Ok(()) => {
                self.drop_part(number);
                Ok(Some(sha256))
            }
            Err(failure) => {
                Err(self.part_failure(Operation::Upload, failure, Some((number, sha256)), policy, retries, jitter, now))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn part_failure(
        &mut self,
        op: Operation,
        failure: Failure,
        part: Option<(u32, String)>,
        policy: &RetryPolicy,
        retries: u32,
        jitter: f64,
        now: UnixMillis,
    ) -> PartFailure {
        // A part the store holds with other bytes (a part's URL is bound to
        // its digest): the file is not the one whose part was stored.
        // Nothing is sent again; the attempt ends.
        let failure = match failure {
            Failure::Http { status: 412, .. } if op == Operation::Upload => Failure::FileChanged,
            other => other,
        };
        let disposition = classify(op, &failure);
        if let Some((number, sha256)) = &part {
            // The part goes back to be signed again (a URL may have expired)
            // after its backoff; its bytes are hashed already.
            self.set(*number, PartState::Hashed { sha256: sha256.clone() });
            self.sent.retain(|(n, _)| n != number);
        }
        match disposition {
            Disposition::Retry { min_delay_ms } => {
                let delay_ms = policy.delay_ms(retries, jitter, min_delay_ms);
                if let Some((number, _)) = part {
                    self.waiting.push((number, now + delay_ms as i64));
                }
                PartFailure::Retry { delay_ms }
            }
            // A part's URL expired (or the store lost the bytes on the
            // way): signed again and sent again, at once.
            Disposition::Renew => PartFailure::Retry { delay_ms: 0 },
            // No answer, a 5xx, a refusal that may mean the attempt ended:
            // the part may be stored. Once the parts on the wire have
            // answered, the server's list says (so no part is sent twice).
            Disposition::Check | Disposition::Confirm | Disposition::Expired => {
                self.draining = true;
                PartFailure::Check
            }
            Disposition::Rejected | Disposition::Fail => {
                self.draining = true;
                PartFailure::Fail(failure)
            }
        }
    }

    /// Whether part `number` waits for its backoff, is hashed but unsigned,
    /// or anything else on its way (for tests and views).
    pub fn is_on_its_way(&self, number: u32) -> bool {
        self.state(number).is_some()
    }

    /// The hash of a part on its way, once known.
    pub fn sha256_of(&self, number: u32) -> Option<&str> {
        self.state(number).and_then(PartState::sha256)
    }
}
