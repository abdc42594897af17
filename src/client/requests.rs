//! Carrying out the page's requests: the join, each command sent (the
//! API through gloo-net, bytes through XHR, hashing), and the file bytes
//! they read.

use std::rc::Rc;

use upload_once_core::page::{Input, Session};
use upload_once_core::retry::Failure;
use upload_once_core::scheduler::{Command, Outcome};
use upload_once_core::wire::{SessionResponse, UploadInstruction};
use uuid::Uuid;
use web_sys::Blob;

use super::{Client, StoredSession, session_key};
use crate::serde_js::{from_js, to_js};
use crate::transport::ProgressFn;

/// How long after a picked file was read whole (by its hash) its PUT starts
/// without reading its first byte again to see that it still reads (the
/// files are hashed just ahead of their sends: about one file's transfer
/// before; an authorize that failed in between forgets the read).
const READ_LATELY_MS: f64 = 2_000.0;

impl Client {
    /// Joins the event, unless another page of this browser already did
    /// (every page speaks as one guest session); the session is stored
    /// durably before it is used.
    pub(super) async fn join(&self, stale_token: Option<String>) -> std::result::Result<Session, Failure> {
        let key = session_key(&self.0.options);
        let stored = self.0.store.get_meta(&key).await.ok().flatten().and_then(|v| from_js::<StoredSession>(v).ok());
        if let Some(session) = stored.filter(|s| Some(&s.token) != stale_token.as_ref()) {
            return Ok(session.session());
        }
        let SessionResponse { session_token, expires_at, event } = self.0.api.join(&self.0.options.guest_code).await?;
        let ours = StoredSession { token: session_token, expires_at, event };
        let value = to_js(&ours).map_err(Failure::Unexpected)?;
        let kept = self
            .0
            .store
            .put_session(&key, &value, stale_token)
            .await
            .map_err(|e| Failure::Unexpected(format!("could not store the session: {e}")))?;
        Ok(from_js::<StoredSession>(kept).unwrap_or(ours).session())
    }

    /// Performs one request and says what came of it.
    pub(super) async fn execute(&self, command: Command, token: String) -> Input {
        let api = &self.0.api;
        let outcome = match command {
            Command::Status { ids } => {
                let result = api.status(&token, &ids).await;
                return Input::Status { ids, result, token };
            }
            Command::Authorize { id, request } => {
                let answer = api.authorize(&token, &request).await;
                if answer.is_err() {
                    // Its PUT will come later than moments after the read.
                    self.0.read_whole_at.borrow_mut().remove(&id);
                }
                (id, Outcome::Authorize(answer))
            }
            Command::Renew { id } => (id, Outcome::Renew(api.renew(&token, id).await)),
            Command::Confirm { id, mut request } => {
                // A file in parts: the composite checksum of the digests of
                // every part of the file held here (the server refuses one
                // that is not the composite of the parts it holds).
                let input = self.page().record(&id).and_then(|r| r.multipart.as_ref()?.composite_input());
                if let Some((raw, count)) = input {
                    request.composite_sha256 = crate::env::sha256_of_bytes(&raw)
                        .await
                        .ok()
                        .filter(|h| !h.is_empty())
                        .map(|hex| format!("{hex}-{count}"));
                }
                (id, Outcome::Confirm(api.confirm(&token, id, &request).await))
            }
            Command::SignParts { id, request } => {
                (id, Outcome::PartsSigned(api.sign_parts(&token, id, &request).await))
            }
            Command::Upload { id, instruction } => match self.put_bytes(id, None, &instruction).await {
                Some(sent) => (id, Outcome::Upload(sent)),
                None => return Input::FileUnavailable { id, part: None },
            },
            // The whole file (it goes up in one PUT), by WebCrypto in JS.
            Command::HashFile { id, size } => (id, Outcome::FileHashed(self.hash(&id, 0, size).await)),
            // Only this part's bytes are read, by WebCrypto in JS.
            Command::HashPart { id, number, start, end } => {
                (id, Outcome::PartHashed { number, result: self.hash(&id, start, end).await })
            }
            Command::UploadPart { id, number, start, end, instruction } => {
                match self.put_bytes(id, Some((number, start, end)), &instruction).await {
                    Some(result) => (id, Outcome::PartSent { number, result }),
                    None => return Input::FileUnavailable { id, part: Some(number) },
                }
            }
        };
        Input::Outcome { id: outcome.0, outcome: outcome.1, token }
    }

    /// PUTs the attempt's bytes (one part's, `[start, end)` of the file,
    /// when `part` is given) as `instruction` says; `None` when its bytes
    /// are gone. An attempt forgotten or cancelled while its bytes were being
    /// read sends nothing. A file changed on disk since the pick is not even
    /// started (WebKit would send the headers, then nothing, until the
    /// server's idle timeout); only a picked file can change: a copy kept in
    /// IndexedDB is the browser's own.
    async fn put_bytes(
        &self,
        id: Uuid,
        part: Option<(u32, u64, u64)>,
        instruction: &UploadInstruction,
    ) -> Option<Result<(), Failure>> {
        let blob = self.blob_for(&id).await;
        if !self.page().is_active(&id) {
            return Some(Err(Failure::Unexpected("the attempt was cancelled".into())));
        }
        let blob = blob?;
        let number = part.map(|(number, _, _)| number);
        // A part is a slice of the Blob: the browser streams it, nothing is
        // copied.
        let bytes = match part {
            Some((_, start, end)) => blob.slice_with_f64_and_f64(start as f64, end as f64).unwrap_or(blob),
            None => blob,
        };
        let picked = self.is_picked(&id);
        // A picked file read whole by its hash moments ago still reads: the
        // probe (a read of its first byte, 5–50 ms on a phone's CPU while
        // other files are read) is for one that was not (issue 34).
        let read_at = self.0.read_whole_at.borrow_mut().remove(&id);
        let read_lately = read_at.is_some_and(|at| (crate::env::now() as f64) - at < READ_LATELY_MS);
        let sent = if !picked || read_lately || crate::env::is_readable(&bytes).await {
            self.0.transport.put(id, number, &bytes, instruction, self.progress_fn(id, number)).await
        } else {
            Err(Failure::FileChanged)
        };
        // The whole file is checked against its hash at the pick too.
        let sha256 = number.is_none().then(|| self.page().record(&id).and_then(|r| r.sha256.clone())).flatten();
        Some(match sent {
            Err(failure) if picked => Err(file_changed_or(failure, &bytes, sha256.as_deref()).await),
            other => other,
        })
    }

    /// The SHA-256 of bytes `[start, end)` of the attempt's file. A file
    /// held in this page that the browser refuses to read (and not because
    /// the page is going away) is `FileUnreadable`; a kept copy that cannot
    /// be read is gone (the attempt then waits for the file).
    pub(super) async fn hash(&self, id: &Uuid, start: u64, end: u64) -> std::result::Result<String, Failure> {
        let Some(blob) = self.blob_for(id).await else {
            return Err(Failure::Unexpected("the file's bytes are not available".into()));
        };
        // The whole file's hash may have started while its record was
        // written (`AddPlan::hash_ahead`); else it starts now.
        let ahead = self.0.hashes_ahead.borrow_mut().remove(id);
        let started = match ahead {
            Some((promise, size)) if start == 0 && end == size => promise,
            _ => crate::env::sha256_hex_start(&blob, start, end),
        };
        let whole = start == 0 && end == blob.size() as u64;
        match crate::env::sha256_hex_of(started).await {
            Ok(hex) => {
                if whole && self.is_picked(id) {
                    self.0.read_whole_at.borrow_mut().insert(*id, crate::env::now() as f64);
                }
                Ok(hex)
            }
            Err(_) if self.is_picked(id) && crate::env::read_failure_is_real().await => Err(Failure::FileUnreadable),
            Err(message) => Err(Failure::Unexpected(message)),
        }
    }

    pub(super) fn progress_fn(&self, id: Uuid, part: Option<u32>) -> ProgressFn {
        let weak = Rc::downgrade(&self.0);
        Rc::new(move |sent, total| {
            if let Some(shared) = weak.upgrade() {
                Client(shared).input(Input::Progress { id, part, sent, total });
            }
        })
    }

    /// The file's bytes, when this page or IndexedDB holds them (e.g. to
    /// show a thumbnail after a reload).
    pub async fn file(&self, id: &Uuid) -> Option<Blob> {
        self.blob_for(id).await
    }

    /// Whether the attempt's bytes are the file the guest picked in this
    /// page (which can change on disk), not a copy kept in IndexedDB.
    pub(super) fn is_picked(&self, id: &Uuid) -> bool {
        self.page().record(id).is_some_and(|r| self.0.files.borrow().contains_key(&r.blob_key))
    }

    pub(super) async fn blob_for(&self, id: &Uuid) -> Option<Blob> {
        let key = self.page().record(id)?.blob_key;
        if let Some(blob) = self.0.files.borrow().get(&key) {
            return Some(blob.clone());
        }
        self.0.store.get_blob(&key).await.ok().flatten()
    }
}

/// What a failed PUT of a picked file is reported as: `FileChanged` when the
/// store refused its bytes as `checksum_mismatch` (a browser that reads the
/// new bytes of a changed file, as Firefox does) and the file no longer
/// reads, or no longer hashes to its hash at the pick; else `failure` as it
/// is (a mismatch on the way, the file unchanged, stays `checksum_mismatch`).
/// A network error is left alone: a reload aborts every upload, and a
/// changed file is found by the check before the next PUT (Chromium and
/// WebKit refuse to read it).
async fn file_changed_or(failure: Failure, blob: &Blob, sha256_at_pick: Option<&str>) -> Failure {
    let mismatch = matches!(&failure, Failure::Http { code: Some(code), .. }
        if code == upload_once_core::ErrorCode::ChecksumMismatch.as_str());
    if !mismatch {
        return failure;
    }
    if !crate::env::is_readable(blob).await {
        return Failure::FileChanged;
    }
    if let Some(expected) = sha256_at_pick {
        let now = crate::env::sha256_hex(blob, 0, blob.size() as u64).await;
        if now.as_deref().map_or(true, |h| !h.is_empty() && h != expected) {
            return Failure::FileChanged;
        }
    }
    failure
}
