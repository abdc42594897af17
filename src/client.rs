//! The driver: runs the core [`Scheduler`] against the browser.
//!
//! The loop is the sans-IO run loop: store what changed (strict durability),
//! start the commands the scheduler allows, wait for a result, an input or
//! the next retry time, repeat. Every decision is the core's; this module
//! only performs I/O and reports results back.

use std::cell::{Cell, RefCell, RefMut};
use std::rc::Rc;

use js_sys::Function;
use upload_once_core::attempt::{AttemptRecord, Confirmation, FileInfo, Transfer};
use upload_once_core::restrictions::{Restrictions, check_filename, normalize_content_type};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::scheduler::{Command, Outcome, Scheduler};
use upload_once_core::wire::{EventInfo, SessionResponse};
use upload_once_core::{ErrorCode, new_attempt_id};
use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;
use web_sys::{Blob, File};

use upload_once_core::idmap::IdMap;
use crate::env::{CryptoEntropy, Signal, is_online, now, request_persistence, sleep};
use crate::error::{Error, Result};
use crate::store::{Durability, IndexedDbStore};
use crate::tabs::{Channel, LockHandle, lock_attempt};
use crate::transport::{Api, HttpApi, ProgressFn, Transport, XhrTransport};
use crate::jsio::{self, FromJs};

/// The first wait before a failed write of attempt records is tried again.
const PERSIST_RETRY_FIRST_MS: i64 = 1000;
/// The longest such wait.
const PERSIST_RETRY_CAP_MS: i64 = 30_000;

/// How often progress is reported per attempt, at most.
const PROGRESS_INTERVAL_MS: f64 = 100.0;

/// Client options (`UploaderOptions` in TypeScript).
#[derive(Clone, Debug)]
pub struct Options {
    /// The app's API base URL, e.g. `https://photos.example`.
    pub api_base: String,
    /// The event slug.
    pub event: String,
    /// The event's guest code.
    pub guest_code: String,
    /// How many requests run at once across all files (default 3).
    pub concurrency: usize,
    /// The app's own restrictions, checked with the event's before any
    /// network.
    pub restrictions: Restrictions,
    /// Files up to this size are kept in IndexedDB so an upload survives a
    /// reload (default 64 MiB: phone photos and short clips; a bigger file
    /// is picked again after a reload rather than copied while it uploads).
    pub keep_file_max_bytes: u64,
    /// At most this many bytes of files are kept in total (default 512 MiB).
    pub keep_files_total_bytes: u64,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// The IndexedDB database name (default `upload-once`).
    pub db_name: String,
}

impl Options {
    /// Options with defaults for everything optional.
    pub fn new(api_base: &str, event: &str, guest_code: &str) -> Options {
        Options {
            api_base: api_base.trim_end_matches('/').to_owned(),
            event: event.to_owned(),
            guest_code: guest_code.to_owned(),
            concurrency: 3,
            restrictions: Restrictions::default(),
            keep_file_max_bytes: 64 << 20,
            keep_files_total_bytes: 512 << 20,
            retry: RetryPolicy::default(),
            db_name: "upload-once".to_owned(),
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidOptions(m.to_owned()));
        if !(self.api_base.starts_with("http://") || self.api_base.starts_with("https://") || self.api_base.starts_with('/'))
            && !self.api_base.is_empty()
        {
            return bad("apiBase must be an http(s) URL or a path");
        }
        if self.event.is_empty() {
            return bad("event is required");
        }
        if self.guest_code.is_empty() {
            return bad("guestCode is required");
        }
        if !(1..=16).contains(&self.concurrency) {
            return bad("concurrency must be between 1 and 16");
        }
        if self.retry.base_ms == 0 || self.retry.cap_ms < self.retry.base_ms {
            return bad("retry.baseMs must be positive and retry.capMs at least retry.baseMs");
        }
        if self.db_name.is_empty() {
            return bad("dbName must not be empty");
        }
        Ok(())
    }
}

/// The network adapters (seams for tests).
#[derive(Clone)]
pub struct Adapters {
    /// The app's API.
    pub api: Rc<dyn Api>,
    /// The byte transfer.
    pub transport: Rc<dyn Transport>,
}

impl Adapters {
    /// gloo-net for the API, XMLHttpRequest for the bytes.
    pub fn browser(options: &Options) -> Adapters {
        Adapters { api: Rc::new(HttpApi::new(&options.api_base, &options.event)), transport: Rc::new(XhrTransport::default()) }
    }
}

/// Clears a flag when dropped.
struct Reset<'a>(&'a Cell<bool>);

impl Drop for Reset<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// The stable code of an HTTP failure.
fn failure_code(f: &Failure) -> Option<&str> {
    match f {
        Failure::Http { code: Some(code), .. } => Some(code),
        _ => None,
    }
}

/// The guest session as kept in IndexedDB.
#[derive(Clone, Debug)]
struct StoredSession {
    token: String,
    expires_at: String,
    event: EventInfo,
}

impl StoredSession {
    fn to_js(&self) -> JsValue {
        jsio::Build::default()
            .str("token", &self.token)
            .str("expires_at", &self.expires_at)
            .val("event", &jsio::event_to_js(&self.event))
            .done()
    }

    fn from_js(v: &JsValue) -> Option<StoredSession> {
        let r = jsio::Read(v);
        Some(StoredSession {
            token: r.str("token").ok()?,
            expires_at: r.str("expires_at").ok()?,
            event: EventInfo::from_js(&r.opt("event")?).ok()?,
        })
    }
}

/// The result of adding one file.
#[derive(Clone, Debug)]
pub enum Added {
    /// A new attempt.
    New(Uuid),
    /// The file was picked again for an attempt that needed it.
    Reattached(Uuid),
    /// The same file already has a live or confirmed attempt.
    Duplicate(Uuid),
    /// Refused before any network.
    Refused {
        /// The file's name.
        file_name: String,
        /// Why.
        error: Error,
    },
}

/// Where an attempt's Web Lock stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockState {
    /// Asked for; no answer yet.
    Asking,
    /// Another page holds it (we wait in line).
    Elsewhere,
    /// This page holds it.
    Held,
}

struct Inner {
    sched: Scheduler,
    session: Option<StoredSession>,
    /// Files picked in this page, by blob key.
    files: IdMap<Blob>,
    /// Blob keys kept in IndexedDB, with their sizes.
    kept: IdMap<u64>,
    locks: IdMap<(LockHandle, LockState)>,
    /// Attempts whose lock was just granted and whose record is being read.
    taking_over: IdMap<()>,
    /// Records `restore()` just read, waiting for their lock: taken over
    /// without reading them again.
    restoring: IdMap<AttemptRecord>,
    /// While a `restore()` is settling its locks, nothing is sent, so the
    /// status checks go out in full batches.
    restores_running: u32,
    /// Attempts created in this page: owned as soon as their lock is granted,
    /// without a reconcile round trip.
    fresh: IdMap<()>,
    progress: IdMap<(f64, f64, f64)>,
    listeners: Vec<Function>,
    remove_listeners: Vec<Function>,
    persisted: Option<bool>,
    /// A session token the server answered `invalid_session` for.
    stale_token: Option<String>,
    closed: bool,
    persist_retry_at: Option<i64>,
    /// The next wait after a failed write of attempt records (doubles to 30 s).
    persist_backoff_ms: i64,
    /// Why attempt records cannot be saved, while that lasts.
    storage_error: Option<Error>,
    storage_listeners: Vec<Function>,
}

impl Inner {
    fn has_blob(&self, r: &AttemptRecord) -> bool {
        self.files.contains_key(&r.blob_key) || self.kept.contains_key(&r.blob_key)
    }

    /// Shows a stored record without driving it (another page may).
    fn show(&mut self, record: AttemptRecord) {
        let revision = record.revision;
        let has_blob = self.has_blob(&record);
        self.sched.insert(record, has_blob, false, revision);
    }

    /// Drives a stored record from here on, asking the server first.
    fn take_over(&mut self, mut record: AttemptRecord) {
        let stored_revision = record.revision;
        record.restore(now());
        let has_blob = self.has_blob(&record);
        self.sched.insert(record, has_blob, true, stored_revision);
    }
}

struct Shared {
    options: Options,
    store: IndexedDbStore,
    api: Rc<dyn Api>,
    transport: Rc<dyn Transport>,
    signal: Signal,
    joining: Cell<bool>,
    adding: Cell<bool>,
    inner: RefCell<Inner>,
    channel: RefCell<Option<Channel>>,
    window_listeners: RefCell<Vec<(&'static str, Closure<dyn FnMut()>)>>,
}

/// A running uploader (the Rust face of the JS `Uploader`).
#[derive(Clone)]
pub struct Client(Rc<Shared>);

fn session_key(options: &Options) -> String {
    format!("session:{}|{}", options.api_base, options.event)
}

impl Client {
    /// Opens the uploader: the store, the stored session (or a new one), and
    /// the records of earlier visits (shown, not yet driven: see
    /// [`Client::restore`]).
    pub async fn open(options: Options, adapters: Adapters) -> Result<Client> {
        options.validate()?;
        let store = IndexedDbStore::open(&options.db_name).await?;
        let session = match store.get_meta(&session_key(&options)).await? {
            Some(v) => StoredSession::from_js(&v),
            None => None,
        };
        let records = store.load_attempts(&options.event).await?;
        let mut kept_sizes = IdMap::default();
        for key in store.blob_keys().await.unwrap_or_default() {
            kept_sizes.insert(key, 0);
        }
        let mut sched = Scheduler::new(options.retry, options.concurrency);
        for r in &records {
            if let Some(size) = kept_sizes.get_mut(&r.blob_key) {
                *size = r.file.size;
            }
        }
        for r in records {
            let has_blob = kept_sizes.contains_key(&r.blob_key);
            let revision = r.revision;
            sched.insert(r, has_blob, false, revision);
        }
        let inner = Inner {
            sched,
            session,
            files: IdMap::default(),
            kept: kept_sizes,
            locks: IdMap::default(),
            taking_over: IdMap::default(),
            restoring: IdMap::default(),
            restores_running: 0,
            fresh: IdMap::default(),
            progress: IdMap::default(),
            listeners: Vec::new(),
            remove_listeners: Vec::new(),
            persisted: None,
            stale_token: None,
            closed: false,
            persist_retry_at: None,
            persist_backoff_ms: PERSIST_RETRY_FIRST_MS,
            storage_error: None,
            storage_listeners: Vec::new(),
        };
        let client = Client(Rc::new(Shared {
            options,
            store,
            api: adapters.api,
            transport: adapters.transport,
            signal: Signal::default(),
            joining: Cell::new(false),
            adding: Cell::new(false),
            inner: RefCell::new(inner),
            channel: RefCell::new(None),
            window_listeners: RefCell::new(Vec::new()),
        }));
        if client.inner().session.is_none() {
            // Join now, so a wrong guest code is an error right here. Without
            // a network the join is retried when the first attempt needs it.
            match client.session_token().await {
                Ok(_) | Err(Failure::Network) => {}
                Err(f @ Failure::Http { status: 500..=599 | 429, .. }) => drop(f),
                Err(f) => return Err(Error::Request(f)),
            }
        }
        client.start();
        Ok(client)
    }

    fn inner(&self) -> RefMut<'_, Inner> {
        self.0.inner.borrow_mut()
    }

    fn start(&self) {
        let weak = Rc::downgrade(&self.0);
        let channel = Channel::open(
            &self.0.options.db_name,
            Rc::new(move |id| {
                if let Some(shared) = weak.upgrade() {
                    Client(shared).on_remote_change(id);
                }
            }),
        );
        *self.0.channel.borrow_mut() = Some(channel);
        let window = crate::env::global();
        for name in ["online", "offline"] {
            let weak = Rc::downgrade(&self.0);
            let closure = Closure::<dyn FnMut()>::new(move || {
                if let Some(shared) = weak.upgrade() {
                    shared.signal.raise();
                }
            });
            if let Some(target) = window.dyn_ref::<web_sys::EventTarget>() {
                let _ = target.add_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
            }
            self.0.window_listeners.borrow_mut().push((name, closure));
        }
        let me = self.clone();
        spawn_local(async move {
            let answer = request_persistence().await;
            me.inner().persisted = answer;
        });
        spawn_local(self.clone().run());
    }

    /// The driver loop.
    async fn run(self) {
        loop {
            if self.inner().closed {
                return;
            }
            self.persist().await;
            self.dispatch();
            // Polling may have changed records (write-ahead: stored before
            // they act); store them and poll again rather than sleep.
            if self.inner().sched.has_dirty() && self.inner().persist_retry_at.is_none() {
                continue;
            }
            let deadline = {
                let inner = self.inner();
                match (inner.sched.next_wakeup(), inner.persist_retry_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            };
            self.0.signal.wait(deadline).await;
        }
    }

    /// Stores every changed record (one strict transaction), then tells the
    /// app and the other tabs.
    async fn persist(&self) {
        let records: Vec<AttemptRecord> = {
            let mut inner = self.inner();
            if inner.persist_retry_at.is_some_and(|t| t > now()) {
                return;
            }
            inner.persist_retry_at = None;
            let ids = inner.sched.take_dirty();
            ids.iter().filter_map(|id| inner.sched.record(id).cloned()).collect()
        };
        if records.is_empty() {
            return;
        }
        // A record never stored before (a successor) must be on disk before
        // its first request; later transitions only need the browser to have
        // them (a restore asks the server anyway).
        let durability = if records.iter().any(|r| r.revision == 1) { Durability::Strict } else { Durability::Relaxed };
        let result = self.0.store.put_attempts(&records.iter().collect::<Vec<_>>(), durability).await;
        if let Err(e) = result {
            // The attempts wait for their records (write-ahead), so the write
            // is tried again, later each time, and the app is told why.
            let mut inner = self.inner();
            for r in &records {
                inner.sched.mark_dirty(r.id);
            }
            let delay = inner.persist_backoff_ms;
            inner.persist_backoff_ms = (delay * 2).min(PERSIST_RETRY_CAP_MS);
            inner.persist_retry_at = Some(now() + delay);
            drop(inner);
            self.set_storage_error(Some(e));
            return;
        }
        self.inner().persist_backoff_ms = PERSIST_RETRY_FIRST_MS;
        self.set_storage_error(None);
        let mut drop_blobs = Vec::new();
        {
            let mut inner = self.inner();
            for r in &records {
                let new_successor = !r.is_terminal() && !inner.locks.contains_key(&r.id) && inner.sched.is_owned(&r.id);
                if new_successor {
                    // Minted here by the scheduler: driven only once its own
                    // lock is granted, like any new attempt.
                    inner.sched.set_owned(&r.id, false);
                }
                inner.sched.mark_persisted(&r.id, r.revision);
                if r.is_terminal() {
                    if let Some((lock, _)) = inner.locks.remove(&r.id) {
                        lock.release();
                        inner.sched.set_owned(&r.id, false);
                    }
                    inner.fresh.remove(&r.id);
                    if matches!(r.confirmation, Confirmation::Confirmed | Confirmation::Rejected) {
                        let shared = inner.sched.records().any(|o| o.blob_key == r.blob_key && !o.is_terminal());
                        if !shared {
                            inner.files.remove(&r.blob_key);
                            if inner.kept.remove(&r.blob_key).is_some() {
                                drop_blobs.push(r.blob_key);
                            }
                        }
                    }
                } else if new_successor {
                    inner.fresh.insert(r.id, ());
                    drop(inner);
                    self.request_lock(r.id);
                    inner = self.inner();
                }
            }
        }
        for r in &records {
            self.notify(&r.id);
            if let Some(c) = self.0.channel.borrow().as_ref() {
                c.announce(&r.id);
            }
        }
        if !drop_blobs.is_empty() {
            let _ = self.0.store.delete_blobs(&drop_blobs).await;
        }
    }

    /// Starts every command the scheduler allows now.
    fn dispatch(&self) {
        if self.inner().session.is_none() && self.0.joining.get() {
            return;
        }
        if self.inner().restores_running > 0 {
            return;
        }
        loop {
            let command = {
                let mut inner = self.inner();
                if inner.closed {
                    return;
                }
                inner.sched.set_online(is_online());
                inner.sched.poll(now())
            };
            let Some(command) = command else { return };
            if let Command::Upload { id, .. } | Command::Confirm { id, .. } = &command {
                self.notify(id);
            }
            spawn_local(self.clone().execute(command));
        }
    }

    /// The session token, joining the event first if needed (one join at a
    /// time; the session is stored durably before it is used).
    async fn session_token(&self) -> std::result::Result<String, Failure> {
        loop {
            if let Some(s) = &self.inner().session {
                return Ok(s.token.clone());
            }
            if !self.0.joining.replace(true) {
                break;
            }
            sleep(50.0).await;
        }
        let outcome = self.join().await;
        self.0.joining.set(false);
        self.0.signal.raise();
        outcome
    }

    /// Joins the event, unless another page of this browser already did:
    /// every page speaks as one guest session.
    async fn join(&self) -> std::result::Result<String, Failure> {
        let key = session_key(&self.0.options);
        let stale = self.inner().stale_token.clone();
        let stored = self.0.store.get_meta(&key).await.ok().flatten().and_then(|v| StoredSession::from_js(&v));
        if let Some(session) = stored.filter(|s| Some(&s.token) != stale.as_ref()) {
            let token = session.token.clone();
            self.inner().session = Some(session);
            return Ok(token);
        }
        let SessionResponse { session_token, expires_at, event } = self.0.api.join(&self.0.options.guest_code).await?;
        let ours = StoredSession { token: session_token, expires_at, event };
        let kept = self
            .0
            .store
            .put_session(&key, &ours.to_js(), stale)
            .await
            .map_err(|e| Failure::Unexpected(format!("could not store the session: {e}")))?;
        let session = StoredSession::from_js(&kept).unwrap_or(ours);
        let token = session.token.clone();
        self.inner().session = Some(session);
        Ok(token)
    }

    /// The server no longer knows this session: the next request joins again.
    fn drop_session_if(&self, outcome_code: Option<&str>, token: &str) {
        if outcome_code != Some(ErrorCode::InvalidSession.as_str()) {
            return;
        }
        let mut inner = self.inner();
        if inner.session.as_ref().is_some_and(|s| s.token == token) {
            inner.session = None;
            inner.stale_token = Some(token.to_owned());
        }
    }

    /// The file's bytes, when this page or IndexedDB holds them (e.g. to
    /// show a thumbnail after a reload).
    pub async fn file(&self, id: &Uuid) -> Option<Blob> {
        self.blob_for(id).await
    }

    async fn blob_for(&self, id: &Uuid) -> Option<Blob> {
        let key = {
            let inner = self.inner();
            let r = inner.sched.record(id)?;
            if let Some(b) = inner.files.get(&r.blob_key) {
                return Some(b.clone());
            }
            r.blob_key
        };
        match self.0.store.get_blob(&key).await {
            Ok(Some(blob)) => Some(blob),
            _ => {
                let mut inner = self.inner();
                inner.kept.remove(&key);
                None
            }
        }
    }

    fn progress_fn(&self, id: Uuid) -> ProgressFn {
        let weak = Rc::downgrade(&self.0);
        Rc::new(move |sent, total| {
            let Some(shared) = weak.upgrade() else { return };
            let client = Client(shared);
            let due = {
                let mut inner = client.inner();
                let t = now() as f64;
                let entry = inner.progress.get_or_insert_with(id, || (0.0, total, 0.0));
                entry.0 = sent;
                entry.1 = total;
                let due = t - entry.2 >= PROGRESS_INTERVAL_MS || sent >= total;
                if due {
                    entry.2 = t;
                }
                due
            };
            if due {
                client.notify(&id);
            }
        })
    }

    async fn execute(self, command: Command) {
        let token = self.session_token().await;
        let outcome: std::result::Result<(Uuid, Outcome), (Vec<Uuid>, _)> = match command {
            Command::Status { ids } => {
                let result = match &token {
                    Ok(t) => self.0.api.status(t, &ids).await,
                    Err(f) => Err(f.clone()),
                };
                Err((ids, result))
            }
            Command::Authorize { id, request } => {
                let r = match &token {
                    Ok(t) => self.0.api.authorize(t, &request).await,
                    Err(f) => Err(f.clone()),
                };
                Ok((id, Outcome::Authorize(r)))
            }
            Command::Renew { id } => {
                let r = match &token {
                    Ok(t) => self.0.api.renew(t, id).await,
                    Err(f) => Err(f.clone()),
                };
                Ok((id, Outcome::Renew(r)))
            }
            Command::Confirm { id, request } => {
                let r = match &token {
                    Ok(t) => self.0.api.confirm(t, id, &request).await,
                    Err(f) => Err(f.clone()),
                };
                Ok((id, Outcome::Confirm(r)))
            }
            Command::Upload { id, instruction } => {
                let blob = self.blob_for(&id).await;
                // Forgotten or cancelled while its bytes were being read.
                let wanted = self.inner().sched.record(&id).is_some_and(|r| !r.is_terminal());
                let r = match blob {
                    _ if !wanted => Err(Failure::Unexpected("the attempt was cancelled".into())),
                    Some(blob) => self.0.transport.put(id, &blob, &instruction, self.progress_fn(id)).await,
                    None => {
                        // The bytes are gone (kept copy lost): the attempt
                        // asks the server, then waits for the file.
                        self.inner().sched.set_has_blob(&id, false);
                        Err(Failure::Unexpected("the file's bytes are not available".into()))
                    }
                };
                Ok((id, Outcome::Upload(r)))
            }
        };
        if let Ok(t) = &token {
            let code = match &outcome {
                Ok((_, Outcome::Authorize(Err(f)) | Outcome::Renew(Err(f)))) => failure_code(f),
                Ok((_, Outcome::Confirm(Err(f)))) => failure_code(f),
                Err((_, Err(f))) => failure_code(f),
                _ => None,
            };
            self.drop_session_if(code, t);
        }
        {
            let mut inner = self.inner();
            if inner.closed {
                return;
            }
            match outcome {
                Ok((id, outcome)) => {
                    inner.progress.remove(&id);
                    inner.sched.handle(&id, outcome, now(), &mut CryptoEntropy);
                }
                Err((ids, result)) => inner.sched.handle_status(&ids, result, now(), &mut CryptoEntropy),
            }
        }
        self.0.signal.raise();
    }

    fn request_lock(&self, id: Uuid) {
        if self.inner().closed || self.inner().locks.contains_key(&id) {
            return;
        }
        let weak = Rc::downgrade(&self.0);
        // The state is recorded before the browser can answer.
        let placeholder = LockHandle::none();
        self.inner().locks.insert(id, (placeholder, LockState::Asking));
        let handle = lock_attempt(&self.0.options.db_name, &id, move |granted| {
            if let Some(shared) = weak.upgrade() {
                Client(shared).on_lock_state(id, granted);
            }
        });
        let mut inner = self.inner();
        let closed = inner.closed;
        match inner.locks.get_mut(&id) {
            Some(entry) if !closed => entry.0 = handle,
            _ => {
                drop(inner);
                handle.release();
            }
        }
    }

    fn on_lock_state(&self, id: Uuid, granted: bool) {
        {
            let mut inner = self.inner();
            let Some(entry) = inner.locks.get_mut(&id) else { return };
            entry.1 = if granted { LockState::Held } else { LockState::Elsewhere };
            if !granted {
                // Another page drives it; when it lets go, read it again.
                inner.restoring.remove(&id);
                inner.fresh.remove(&id);
                inner.sched.set_owned(&id, false);
                return;
            }
            if inner.closed {
                return;
            }
            if let Some(record) = inner.restoring.remove(&id) {
                // Granted at once during a restore: the record read moments
                // ago is the latest; the server check comes next.
                inner.take_over(record);
                drop(inner);
                self.0.signal.raise();
                return;
            }
            if inner.fresh.contains_key(&id) {
                inner.sched.set_owned(&id, true);
                drop(inner);
                self.notify(&id);
                self.0.signal.raise();
                return;
            }
            inner.taking_over.insert(id, ());
        }
        let me = self.clone();
        spawn_local(async move {
            // Taking over (restore, or another tab went away): the stored
            // record is the latest truth this browser has; the server comes next.
            let stored = me.0.store.load_attempt(&id).await;
            // Another page may have kept the file since we last looked.
            if let Ok(Some(r)) = &stored {
                let known = me.inner().has_blob(r);
                if !known && !me.0.store.blobs_broken() {
                    if let Ok(Some(_)) = me.0.store.get_blob(&r.blob_key).await {
                        me.inner().kept.insert(r.blob_key, r.file.size);
                    }
                }
            }
            let mut inner = me.inner();
            inner.taking_over.remove(&id);
            if inner.closed {
                return;
            }
            match stored {
                Ok(Some(record)) if !record.is_terminal() => {
                    inner.take_over(record);
                    drop(inner);
                    me.0.signal.raise();
                }
                other => {
                    if let Ok(Some(record)) = other {
                        inner.show(record);
                    }
                    if let Some((lock, _)) = inner.locks.remove(&id) {
                        lock.release();
                    }
                    drop(inner);
                    me.notify(&id);
                }
            }
        });
    }

    /// Whether some lock request still waits for the browser's first answer.
    fn locks_settling(&self) -> bool {
        let inner = self.inner();
        !inner.taking_over.is_empty() || inner.locks.values().any(|(_, s)| *s == LockState::Asking)
    }

    fn on_remote_change(&self, id: Uuid) {
        let me = self.clone();
        spawn_local(async move {
            if me.inner().closed || me.inner().sched.is_owned(&id) {
                return;
            }
            let record = match me.0.store.load_attempt(&id).await {
                Ok(Some(record)) => record,
                Ok(None) => {
                    // Forgotten in another tab.
                    let removed = {
                        let mut inner = me.inner();
                        let removed = inner.sched.remove(&id).is_some();
                        if let Some((lock, _)) = inner.locks.remove(&id) {
                            lock.release();
                        }
                        removed
                    };
                    if removed {
                        me.notify_removed(&id);
                    }
                    return;
                }
                Err(_) => return,
            };
            if record.event != me.0.options.event {
                return;
            }
            let terminal = record.is_terminal();
            {
                let mut inner = me.inner();
                if inner.sched.is_owned(&id) {
                    return;
                }
                inner.show(record);
            }
            me.notify(&id);
            // Be ready to take over if the page driving it goes away.
            if !terminal && !me.inner().locks.contains_key(&id) {
                me.request_lock(id);
            }
        });
    }

    /// Reconciles every unfinished attempt of this event with the server:
    /// each is driven by exactly one page (Web Locks), starting from what
    /// the server says became of it.
    pub async fn restore(&self) -> Result<Vec<Uuid>> {
        let records = self.0.store.load_attempts(&self.0.options.event).await?;
        if let Ok(keys) = self.0.store.blob_keys().await {
            let mut inner = self.inner();
            for key in keys {
                let size = records.iter().find(|r| r.blob_key == key).map_or(0, |r| r.file.size);
                inner.kept.insert(key, size);
            }
        }
        let mut ids = Vec::with_capacity(records.len());
        let mut to_lock = Vec::new();
        {
            let mut inner = self.inner();
            for r in records {
                ids.push(r.id);
                let busy_here = inner.sched.is_owned(&r.id);
                if !r.is_terminal() && !inner.locks.contains_key(&r.id) {
                    to_lock.push(r.id);
                    inner.restoring.insert(r.id, r.clone());
                }
                if !busy_here {
                    inner.show(r);
                }
            }
        }
        // Moderation may have moved while the page was away.
        self.inner().sched.request_refresh();
        self.inner().restores_running += 1;
        for id in to_lock {
            self.request_lock(id);
        }
        // Resolve once every attempt is either driven here or known to be
        // driven by another page.
        while self.locks_settling() {
            sleep(5.0).await;
        }
        self.inner().restores_running -= 1;
        self.0.signal.raise();
        Ok(ids)
    }

    /// Adds files: each is checked, then every new attempt is durably
    /// recorded (one strict transaction) before anything is sent. The
    /// uploads start right away; the call resolves once the files' bytes
    /// are also kept for a reload (within the caps, where the browser lets
    /// them be stored).
    pub async fn add(&self, files: Vec<File>) -> Result<Vec<Added>> {
        if self.inner().closed {
            return Err(Error::Closed);
        }
        // One add at a time: a second one (a double drop, a quick re-pick)
        // must see the first one's attempts, or one file would get two ids.
        while self.0.adding.replace(true) {
            sleep(5.0).await;
        }
        let _one_at_a_time = Reset(&self.0.adding);
        let event = self.0.options.event.clone();
        let now = now();
        let mut added = Vec::with_capacity(files.len());
        let mut new_records: Vec<(AttemptRecord, File)> = Vec::new();
        let mut retried = Vec::new();
        let mut to_keep: Vec<(Uuid, File)> = Vec::new();
        {
            let mut inner = self.inner();
            let event_limits = inner.session.as_ref().map(|s| Restrictions {
                max_file_bytes: Some(s.event.max_file_bytes),
                allowed_types: s.event.allowed_types.clone(),
            });
            for file in files {
                let info = FileInfo {
                    name: file.name(),
                    size: file.size() as u64,
                    content_type: normalize_content_type(&file.type_()),
                    last_modified: file.last_modified() as i64,
                };
                let checked = check_filename(&info.name)
                    .and_then(|()| self.0.options.restrictions.check(info.size, &info.content_type))
                    .and_then(|()| event_limits.as_ref().map_or(Ok(()), |l| l.check(info.size, &info.content_type)));
                if let Err(e) = checked {
                    added.push(Added::Refused { file_name: info.name, error: Error::Restriction(e) });
                    continue;
                }
                // The same file (name, size, modification time) keeps its
                // attempt: one that waits for it, one that failed (it is
                // retried, same id), or one that is done (a duplicate).
                let existing = inner
                    .sched
                    .records()
                    .find(|r| {
                        r.event == event
                            && r.file.same_file(&info)
                            && (!r.is_terminal()
                                || r.confirmation == Confirmation::Confirmed
                                || (r.transfer == Transfer::Failed && r.confirmation == Confirmation::Unconfirmed))
                    })
                    .map(|r| (r.id, r.blob_key, r.needs_file(), r.transfer == Transfer::Failed, r.is_terminal()));
                if let Some((id, blob_key, needs_file, failed, terminal)) = existing {
                    if !terminal || failed {
                        inner.files.insert(blob_key, file.clone().into());
                        inner.sched.set_has_blob(&id, true);
                    }
                    if (needs_file || failed) && !inner.kept.contains_key(&blob_key) {
                        to_keep.push((blob_key, file.clone()));
                    }
                    if needs_file && inner.sched.attach_file(&id, now) {
                        added.push(Added::Reattached(id));
                    } else if failed && inner.sched.retry(&id, now) {
                        retried.push(id);
                        added.push(Added::Reattached(id));
                    } else {
                        added.push(Added::Duplicate(id));
                    }
                    continue;
                }
                let id = new_attempt_id(&mut CryptoEntropy);
                added.push(Added::New(id));
                // One millisecond apart, so the guest's order survives a reload.
                let created_at = now + new_records.len() as i64;
                new_records.push((AttemptRecord::new(id, &event, info, created_at), file));
            }
        }
        if !new_records.is_empty() {
            // Durable first: if this fails (quota, storage gone), nothing was
            // written and nothing is sent.
            let refs: Vec<&AttemptRecord> = new_records.iter().map(|(r, _)| r).collect();
            self.0.store.put_attempts(&refs, Durability::Strict).await?;
            {
                let mut inner = self.inner();
                for (record, file) in &new_records {
                    inner.files.insert(record.blob_key, file.clone().into());
                    inner.fresh.insert(record.id, ());
                    let revision = record.revision;
                    inner.sched.insert(record.clone(), true, false, revision);
                }
            }
            for (record, _) in &new_records {
                self.request_lock(record.id);
            }
            to_keep.extend(new_records.into_iter().map(|(r, f)| (r.blob_key, f)));
        }
        for id in retried {
            self.request_lock(id);
        }
        for a in &added {
            if let Added::New(id) | Added::Reattached(id) | Added::Duplicate(id) = a {
                self.notify(id);
            }
        }
        // The uploads start now; the copies for a reload are made meanwhile,
        // and `add` resolves once they are (or could not be) kept.
        self.0.signal.raise();
        self.keep_files(to_keep).await;
        Ok(added)
    }

    /// Keeps files in IndexedDB (within the caps). A refusal only means the
    /// file will not survive a reload (the attempt then shows `needs_file`).
    async fn keep_files(&self, files: Vec<(Uuid, File)>) {
        // Within the caps, in the order picked.
        let mut total: u64 = self.inner().kept.values().sum();
        let mut fitting: Vec<(Uuid, Blob, u64)> = Vec::new();
        for (key, file) in files {
            let size = file.size() as u64;
            if size <= self.0.options.keep_file_max_bytes && total + size <= self.0.options.keep_files_total_bytes {
                total += size;
                fitting.push((key, file.into(), size));
            }
        }
        // Until this page has stored a blob, one alone first; then batches.
        let mut rest = fitting.as_slice();
        while !rest.is_empty() && !self.0.store.blobs_broken() {
            let take = if self.0.store.blobs_proven() { rest.len().min(64) } else { 1 };
            let (batch, tail) = rest.split_at(take);
            rest = tail;
            let items: Vec<(Uuid, Blob)> = batch.iter().map(|(k, b, _)| (*k, b.clone())).collect();
            if let Err(e) = self.0.store.put_blobs(&items).await {
                web_sys::console::warn_1(&format!("upload-once: files are not kept across reloads ({e})").into());
                return;
            }
            let mut done = Vec::new();
            let mut unneeded = Vec::new();
            {
                let mut inner = self.inner();
                for (key, _, size) in batch {
                    if inner.sched.records().any(|r| r.blob_key == *key && !r.is_terminal()) {
                        inner.kept.insert(*key, *size);
                        done.extend(inner.sched.records().filter(|r| r.blob_key == *key).map(|r| r.id));
                    } else {
                        // Finished meanwhile: the copy is not needed.
                        unneeded.push(*key);
                    }
                }
            }
            for id in done {
                self.notify(&id);
            }
            if !unneeded.is_empty() {
                let _ = self.0.store.delete_blobs(&unneeded).await;
            }
        }
    }

    /// Cancels an attempt: aborts its transfer; it shows as failed with
    /// `cancelled` and can be retried.
    pub fn cancel(&self, id: &Uuid) -> Result<bool> {
        let ok = {
            let mut inner = self.inner();
            if inner.sched.record(id).is_none() {
                return Err(Error::NotFound(format!("no attempt {id}")));
            }
            inner.sched.cancel(id, now())
        };
        self.0.transport.abort(id);
        self.0.signal.raise();
        Ok(ok)
    }

    /// Retries a failed attempt (does nothing to an active one).
    pub fn retry(&self, id: &Uuid) -> Result<bool> {
        let changed = {
            let mut inner = self.inner();
            if inner.sched.record(id).is_none() {
                return Err(Error::NotFound(format!("no attempt {id}")));
            }
            let changed = inner.sched.retry(id, now());
            if changed && !inner.locks.contains_key(id) {
                // Driven only once this page holds its lock again; the record
                // in memory is the one just retried.
                inner.sched.set_owned(id, false);
                inner.fresh.insert(*id, ());
            }
            changed
        };
        if changed && !self.inner().locks.contains_key(id) {
            self.request_lock(*id);
        }
        self.0.signal.raise();
        Ok(changed)
    }

    /// Forgets an attempt: cancels it if active, deletes its record and (if
    /// unshared) its kept file.
    pub async fn forget(&self, id: &Uuid) -> Result<()> {
        let record = {
            let mut inner = self.inner();
            let Some(record) = inner.sched.record(id).cloned() else {
                return Err(Error::NotFound(format!("no attempt {id}")));
            };
            inner.sched.cancel(id, now());
            record
        };
        self.0.transport.abort(id);
        self.0.store.delete_attempts(&[*id]).await?;
        let unshared = {
            let mut inner = self.inner();
            inner.sched.remove(id);
            if let Some((lock, _)) = inner.locks.remove(id) {
                lock.release();
            }
            inner.fresh.remove(id);
            let unshared = !inner.sched.records().any(|r| r.blob_key == record.blob_key);
            if unshared {
                inner.files.remove(&record.blob_key);
                inner.kept.remove(&record.blob_key);
            }
            unshared
        };
        if unshared {
            let _ = self.0.store.delete_blobs(&[record.blob_key]).await;
        }
        if let Some(c) = self.0.channel.borrow().as_ref() {
            c.announce(id);
        }
        self.notify_removed(id);
        Ok(())
    }

    /// Asks the server for fresh moderation states.
    pub fn refresh(&self) {
        self.inner().sched.request_refresh();
        self.0.signal.raise();
    }

    /// Subscribes to changes.
    pub fn on_change(&self, listener: Function) {
        self.inner().listeners.push(listener);
    }

    /// Subscribes to changes of [`Client::storage_error`].
    pub fn on_storage_error(&self, listener: Function) {
        self.inner().storage_listeners.push(listener);
    }

    /// Why attempt records cannot be saved in IndexedDB right now (quota,
    /// storage gone, another page upgraded the database); `None` once a save
    /// works again. While it lasts, the attempts whose records wait wait too.
    pub fn storage_error(&self) -> Option<Error> {
        self.inner().storage_error.clone()
    }

    fn set_storage_error(&self, error: Option<Error>) {
        let listeners = {
            let mut inner = self.inner();
            if inner.storage_error == error {
                return;
            }
            inner.storage_error = error.clone();
            inner.storage_listeners.clone()
        };
        let value = error.as_ref().map_or(JsValue::NULL, jsio::error_info_to_js);
        for listener in listeners {
            let _ = listener.call1(&JsValue::NULL, &value);
        }
    }

    /// Subscribes to removals (`forget`, here or in another tab).
    pub fn on_remove(&self, listener: Function) {
        self.inner().remove_listeners.push(listener);
    }

    fn notify_removed(&self, id: &Uuid) {
        let listeners = self.inner().remove_listeners.clone();
        for listener in listeners {
            let _ = listener.call1(&JsValue::NULL, &JsValue::from_str(&id.to_string()));
        }
    }

    fn notify(&self, id: &Uuid) {
        let (listeners, view) = {
            let inner = self.inner();
            if inner.listeners.is_empty() {
                return;
            }
            let Some(view) = Self::view_of(&inner, id) else { return };
            (inner.listeners.clone(), view)
        };
        for listener in listeners {
            let _ = listener.call1(&JsValue::NULL, &view);
        }
    }

    fn view_of(inner: &Inner, id: &Uuid) -> Option<JsValue> {
        let r = inner.sched.record(id)?;
        let progress = inner.progress.get(id).map(|p| (p.0, p.1));
        let kept = inner.kept.contains_key(&r.blob_key);
        Some(jsio::view_to_js(r, progress, inner.sched.is_owned(id), inner.has_blob(r), kept, is_online()))
    }

    /// The JS view of one attempt.
    pub fn view(&self, id: &Uuid) -> Option<JsValue> {
        Self::view_of(&self.inner(), id)
    }

    /// The JS views of every attempt, oldest first.
    pub fn views(&self) -> Vec<JsValue> {
        let inner = self.inner();
        let ids: Vec<Uuid> = inner.sched.records().map(|r| r.id).collect();
        ids.iter().filter_map(|id| Self::view_of(&inner, id)).collect()
    }

    /// One attempt's record.
    pub fn record(&self, id: &Uuid) -> Option<AttemptRecord> {
        self.inner().sched.record(id).cloned()
    }

    /// Every record, oldest first.
    pub fn records(&self) -> Vec<AttemptRecord> {
        self.inner().sched.records().cloned().collect()
    }

    /// Whether every attempt this page drives is finished (or waits for the
    /// guest), with nothing in flight and nothing left to store.
    pub fn is_idle(&self) -> bool {
        let inner = self.inner();
        inner.sched.is_idle()
            && !self.0.joining.get()
            && inner.taking_over.is_empty()
            && !inner.locks.values().any(|(_, s)| *s == LockState::Asking)
            && inner.sched.records().all(|r| {
                // A fresh attempt whose lock is not granted yet is about to be
                // driven here.
                let waiting_for_lock = !r.is_terminal() && inner.fresh.contains_key(&r.id) && !inner.sched.is_owned(&r.id);
                inner.sched.is_persisted(&r.id) && !waiting_for_lock
            })
    }

    /// The answer of `navigator.storage.persist()`, once known.
    pub fn persisted(&self) -> Option<bool> {
        self.inner().persisted
    }

    /// The event, once a session exists.
    pub fn event(&self) -> Option<EventInfo> {
        self.inner().session.as_ref().map(|s| s.event.clone())
    }

    /// Whether a session token is held.
    pub fn has_session(&self) -> bool {
        self.inner().session.is_some()
    }

    /// Stops: aborts transfers, releases every lock, leaves the channel.
    /// Records stay in IndexedDB for the next visit.
    pub fn close(&self) {
        let (locks, running) = {
            let mut inner = self.inner();
            if inner.closed {
                return;
            }
            inner.closed = true;
            let running: Vec<Uuid> = inner.sched.records().filter(|r| inner.sched.is_busy(&r.id)).map(|r| r.id).collect();
            (inner.locks.drain().map(|(_, (l, _))| l).collect::<Vec<_>>(), running)
        };
        for id in running {
            self.0.transport.abort(&id);
        }
        for lock in locks {
            lock.release();
        }
        if let Some(c) = self.0.channel.borrow_mut().take() {
            c.close();
        }
        let window = crate::env::global();
        if let Some(target) = window.dyn_ref::<web_sys::EventTarget>() {
            for (name, closure) in self.0.window_listeners.borrow_mut().drain(..) {
                let _ = target.remove_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
            }
        }
        self.0.store.close_connection();
        self.0.signal.raise();
    }
}
