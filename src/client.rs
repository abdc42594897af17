//! The driver: carries the core's [`Page`] out into the browser.
//!
//! Every decision is the page model's. This module only performs its
//! effects — IndexedDB reads and writes, Web Locks, requests, the
//! BroadcastChannel, the app's listeners — and feeds what they answer back
//! as inputs. Tasks that wait on the browser never touch the page: they
//! queue their answer and wake the loop, which hands it over. The loop
//! sleeps until an input arrives or [`Page::poll_timeout`].

use std::cell::{Cell, RefCell, RefMut};
use std::collections::VecDeque;
use std::rc::Rc;

use js_sys::Function;
use serde::{Deserialize, Serialize};
use upload_once_core::attempt::{AttemptRecord, FileInfo};
use upload_once_core::idmap::IdMap;
use upload_once_core::page::{Added, Effect, Input, Page, PageConfig, Session, Ticket};
use upload_once_core::restrictions::{Restrictions, normalize_content_type};
use upload_once_core::retry::{Failure, RetryPolicy};
use upload_once_core::scheduler::{Command, Outcome};
use upload_once_core::view::{AttemptView, ErrorInfo};
use upload_once_core::wire::{EventInfo, SessionResponse};
use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;
use web_sys::{Blob, File};

use crate::env::{CompleteOnDrop, Completion, CryptoEntropy, Signal, is_online, now, request_persistence};
use crate::error::{Error, Result};
use crate::serde_js::{from_js, to_js};
use crate::store::{Durability, IndexedDbStore};
use crate::tabs::{Channel, LockHandle, lock_attempt};
use crate::transport::{Api, HttpApi, ProgressFn, Transport, XhrTransport};

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
    /// A file that goes up in one PUT is hashed whole (SHA-256) before its
    /// first byte leaves when it is at most this big (default 64 MiB; never
    /// above the server's multipart threshold): the server then finds the
    /// same photo already shared, and refuses bytes that changed since the
    /// pick. 0 turns it off. The file is read into memory once to hash it.
    pub hash_file_max_bytes: u64,
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
            hash_file_max_bytes: upload_once_core::scheduler::DEFAULT_HASH_LIMIT,
            retry: RetryPolicy::default(),
            db_name: "upload-once".to_owned(),
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidOptions(m.to_owned()));
        if !(self.api_base.starts_with("http://")
            || self.api_base.starts_with("https://")
            || self.api_base.starts_with('/'))
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

    fn page_config(&self) -> PageConfig {
        PageConfig {
            event: self.event.clone(),
            policy: self.retry,
            concurrency: self.concurrency,
            restrictions: self.restrictions.clone(),
            keep_file_max_bytes: self.keep_file_max_bytes,
            keep_files_total_bytes: self.keep_files_total_bytes,
            hash_file_max_bytes: self.hash_file_max_bytes,
        }
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
        Adapters {
            api: Rc::new(HttpApi::new(&options.api_base, &options.event)),
            transport: Rc::new(XhrTransport::default()),
        }
    }
}

/// The guest session as kept in IndexedDB (shared by every page of this
/// browser).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StoredSession {
    token: String,
    expires_at: String,
    event: EventInfo,
}

impl StoredSession {
    fn session(&self) -> Session {
        Session { token: self.token.clone(), event: self.event.clone() }
    }
}

/// An error as the page model keeps it.
fn core_error(e: &Error) -> upload_once_core::Error {
    let code = upload_once_core::ErrorCode::parse(&e.code()).unwrap_or(upload_once_core::ErrorCode::StorageUnavailable);
    upload_once_core::Error::new(code, e.message())
}

/// The app's listeners, each with an id to unsubscribe it.
#[derive(Default)]
struct Listeners {
    next: u32,
    change: Vec<(u32, Function)>,
    remove: Vec<(u32, Function)>,
    storage: Vec<(u32, Function)>,
    session: Vec<(u32, Function)>,
}

/// Which listener list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenerKind {
    /// `onChange`.
    Change,
    /// `onRemove`.
    Remove,
    /// `onStorageError`.
    Storage,
    /// `onSessionChange`.
    Session,
}

impl Listeners {
    fn list(&mut self, kind: ListenerKind) -> &mut Vec<(u32, Function)> {
        match kind {
            ListenerKind::Change => &mut self.change,
            ListenerKind::Remove => &mut self.remove,
            ListenerKind::Storage => &mut self.storage,
            ListenerKind::Session => &mut self.session,
        }
    }
}

struct Shared {
    options: Options,
    store: IndexedDbStore,
    api: Rc<dyn Api>,
    transport: Rc<dyn Transport>,
    signal: Signal,
    page: RefCell<Page>,
    /// Answers of the browser, waiting for the loop.
    inputs: RefCell<VecDeque<Input>>,
    /// Files' bytes held in memory, by blob key.
    files: RefCell<IdMap<Blob>>,
    locks: RefCell<IdMap<LockHandle>>,
    tickets: RefCell<Vec<(Ticket, Completion)>>,
    /// The last `add`, which the next one waits for.
    last_add: RefCell<Option<Completion>>,
    /// `add`s waiting for a join under way to answer.
    join_waiters: RefCell<Vec<Completion>>,
    listeners: RefCell<Listeners>,
    persisted: Cell<Option<bool>>,
    /// The online state the page was last told.
    online: Cell<Option<bool>>,
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
        let stored = match store.get_meta(&session_key(&options)).await? {
            Some(v) => from_js::<StoredSession>(v).ok(),
            None => None,
        };
        let records = store.load_attempts(&options.event).await?;
        let kept = store.blob_keys().await.unwrap_or_default();
        let mut page = Page::new(options.page_config());
        page.open(records, &kept);
        let client = Client(Rc::new(Shared {
            options,
            store,
            api: adapters.api,
            transport: adapters.transport,
            signal: Signal::default(),
            page: RefCell::new(page),
            inputs: RefCell::new(VecDeque::new()),
            files: RefCell::new(IdMap::default()),
            locks: RefCell::new(IdMap::default()),
            tickets: RefCell::new(Vec::new()),
            last_add: RefCell::new(None),
            join_waiters: RefCell::new(Vec::new()),
            listeners: RefCell::new(Listeners::default()),
            persisted: Cell::new(None),
            online: Cell::new(None),
            channel: RefCell::new(None),
            window_listeners: RefCell::new(Vec::new()),
        }));
        match stored {
            Some(s) => client.page().set_session(s.session()),
            // A first visit joins in the background: the uploader is usable
            // at once (ids are minted here); a wrong guest code is reported
            // through `onSessionChange` and on the attempts that waited.
            None => client.page().join_now(),
        }
        client.start();
        Ok(client)
    }

    fn page(&self) -> RefMut<'_, Page> {
        self.0.page.borrow_mut()
    }

    /// Queues an answer for the loop and wakes it.
    fn input(&self, input: Input) {
        self.0.inputs.borrow_mut().push_back(input);
        self.0.signal.raise();
    }

    fn start(&self) {
        let weak = Rc::downgrade(&self.0);
        let channel = Channel::open(
            &self.0.options.db_name,
            Rc::new(move |id| {
                if let Some(shared) = weak.upgrade() {
                    Client(shared).input(Input::RemoteChange(id));
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
            me.0.persisted.set(request_persistence().await);
        });
        spawn_local(self.clone().run());
    }

    /// The driver loop: hand over the inputs, carry out the effects, sleep
    /// until the next input or the page's next time.
    async fn run(self) {
        loop {
            self.step();
            if self.page().is_closed() {
                return;
            }
            let deadline = self.page().poll_timeout();
            self.0.signal.wait(deadline).await;
        }
    }

    /// Hands every queued input to the page and carries out every effect,
    /// until there are none.
    fn step(&self) {
        loop {
            let online = is_online();
            if self.0.online.replace(Some(online)) != Some(online) {
                self.0.inputs.borrow_mut().push_back(Input::Online(online));
            }
            let inputs: Vec<Input> = self.0.inputs.borrow_mut().drain(..).collect();
            let had_inputs = !inputs.is_empty();
            let joined = inputs.iter().any(|i| matches!(i, Input::Joined(_)));
            {
                let mut page = self.page();
                for input in inputs {
                    page.handle(input, now(), &mut CryptoEntropy);
                }
            }
            if joined {
                for waiter in self.0.join_waiters.borrow_mut().drain(..) {
                    waiter.complete();
                }
            }
            let effect = self.page().poll_effect(now());
            match effect {
                Some(effect) => self.carry_out(effect),
                None if had_inputs || !self.0.inputs.borrow().is_empty() => {}
                None => return,
            }
        }
    }

    /// Performs one effect; those with an answer run as tasks that queue it.
    fn carry_out(&self, effect: Effect) {
        match effect {
            Effect::Store { records, durability } => self.spawn(async move |me| {
                let refs: Vec<&AttemptRecord> = records.iter().collect();
                let result = me.0.store.put_attempts(&refs, durability).await;
                Input::Stored(result.map_err(|e| core_error(&e)))
            }),
            Effect::AskLock(id) => {
                let weak = Rc::downgrade(&self.0);
                let handle = lock_attempt(&self.0.options.db_name, &id, move |granted| {
                    if let Some(shared) = weak.upgrade() {
                        Client(shared).input(Input::Lock { id, granted });
                    }
                });
                self.0.locks.borrow_mut().insert(id, handle);
            }
            Effect::ReleaseLock(id) => {
                let handle = self.0.locks.borrow_mut().remove(&id);
                if let Some(handle) = handle {
                    handle.release();
                }
            }
            Effect::Load { id, find_file } => self.spawn(async move |me| {
                let record = me.0.store.load_attempt(&id).await.map_err(|e| core_error(&e));
                let mut file_found = false;
                if let Some(key) = find_file.filter(|_| !me.0.store.blobs_broken()) {
                    file_found = matches!(me.0.store.get_blob(&key).await, Ok(Some(_)));
                }
                Input::Loaded { id, record, file_found }
            }),
            Effect::KeepFiles(keys) => self.spawn(async move |me| {
                let items: Vec<(Uuid, Blob)> = {
                    let files = me.0.files.borrow();
                    keys.iter().filter_map(|k| files.get(k).map(|b| (*k, b.clone()))).collect()
                };
                let result = me.0.store.put_blobs(&items).await;
                Input::Kept(result.map_err(|e| core_error(&e)))
            }),
            Effect::DeleteKeptFiles(keys) => {
                let me = self.clone();
                spawn_local(async move {
                    let _ = me.0.store.delete_blobs(&keys).await;
                });
            }
            Effect::DropFile(key) => {
                self.0.files.borrow_mut().remove(&key);
            }
            Effect::Recheck(key) => {
                // The file goes through add again (DropFile follows: it is
                // taken now).
                let file = self.0.files.borrow().get(&key).cloned().and_then(|b| b.dyn_into::<File>().ok());
                if let Some(file) = file {
                    let me = self.clone();
                    spawn_local(async move {
                        let _ = me.add(vec![file]).await;
                    });
                }
            }
            Effect::Join { stale_token } => self.spawn(async move |me| Input::Joined(me.join(stale_token).await)),
            Effect::Send { command, token } => self.spawn(async move |me| me.execute(command, token).await),
            Effect::Abort(id) => self.0.transport.abort(&id),
            Effect::Announce(id) => {
                if let Some(c) = self.0.channel.borrow().as_ref() {
                    c.announce(&id);
                }
            }
            Effect::Changed(id) => self.notify(&id),
            Effect::Removed(id) => self.call(ListenerKind::Remove, &JsValue::from_str(&id.to_string())),
            Effect::StorageError(error) => {
                let value = error.map_or(JsValue::NULL, |e| {
                    to_js(&ErrorInfo { code: e.code.as_str().into(), message: e.message }).unwrap_or(JsValue::NULL)
                });
                self.call(ListenerKind::Storage, &value);
            }
            Effect::SessionChanged => {
                let event = self.event().and_then(|e| to_js(&e).ok()).unwrap_or(JsValue::NULL);
                let error = self.session_error().and_then(|e| to_js(&e).ok()).unwrap_or(JsValue::NULL);
                let listeners: Vec<Function> =
                    self.0.listeners.borrow().session.iter().map(|(_, f)| f.clone()).collect();
                for listener in listeners {
                    let _ = listener.call2(&JsValue::NULL, &event, &error);
                }
            }
            Effect::FilesNotKept(e) => {
                web_sys::console::warn_1(&format!("upload-once: files are not kept across reloads ({e})").into());
            }
            Effect::Done(ticket) => {
                let done: Vec<Completion> = {
                    let mut tickets = self.0.tickets.borrow_mut();
                    let (done, rest) = tickets.drain(..).partition(|(t, _)| *t == ticket);
                    *tickets = rest;
                    done.into_iter().map(|(_, c)| c).collect()
                };
                for c in done {
                    c.complete();
                }
            }
        }
    }

    /// Runs `work` as a task and queues the input it answers.
    fn spawn(&self, work: impl AsyncFnOnce(Client) -> Input + 'static) {
        let me = self.clone();
        spawn_local(async move {
            let input = work(me.clone()).await;
            if !me.page().is_closed() {
                me.input(input);
            }
        });
    }

    /// Waits until the page says `ticket` is done.
    async fn ticket_done(&self, ticket: Ticket) {
        let done = Completion::default();
        self.0.tickets.borrow_mut().push((ticket, done.clone()));
        self.0.signal.raise();
        done.await;
    }

    /// Joins the event, unless another page of this browser already did
    /// (every page speaks as one guest session); the session is stored
    /// durably before it is used.
    async fn join(&self, stale_token: Option<String>) -> std::result::Result<Session, Failure> {
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
    async fn execute(&self, command: Command, token: String) -> Input {
        let api = &self.0.api;
        let outcome = match command {
            Command::Status { ids } => {
                let result = api.status(&token, &ids).await;
                return Input::Status { ids, result, token };
            }
            Command::Authorize { id, request } => (id, Outcome::Authorize(api.authorize(&token, &request).await)),
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
            Command::Upload { id, instruction } => {
                let blob = self.blob_for(&id).await;
                // Forgotten or cancelled while its bytes were being read.
                if !self.page().is_active(&id) {
                    (id, Outcome::Upload(Err(Failure::Unexpected("the attempt was cancelled".into()))))
                } else {
                    let Some(blob) = blob else {
                        return Input::FileUnavailable { id, part: None };
                    };
                    // A file changed on disk since the pick is not even started
                    // (WebKit would send the headers, then nothing, until the
                    // server's idle timeout). Only a picked file can change: a
                    // copy kept in IndexedDB is the browser's own.
                    let picked = self.is_picked(&id);
                    let sent = if !picked || crate::env::is_readable(&blob).await {
                        self.0.transport.put(id, None, &blob, &instruction, self.progress_fn(id, None)).await
                    } else {
                        Err(Failure::FileChanged)
                    };
                    let sha256 = self.page().record(&id).and_then(|r| r.sha256.clone());
                    let sent = match sent {
                        Err(failure) if picked => Err(file_changed_or(failure, &blob, sha256.as_deref()).await),
                        other => other,
                    };
                    (id, Outcome::Upload(sent))
                }
            }
            // The whole file (it goes up in one PUT), by WebCrypto in JS.
            Command::HashFile { id, size } => (id, Outcome::FileHashed(self.hash(&id, 0, size).await)),
            // Only this part's bytes are read, by WebCrypto in JS.
            Command::HashPart { id, number, start, end } => {
                (id, Outcome::PartHashed { number, result: self.hash(&id, start, end).await })
            }
            Command::UploadPart { id, number, start, end, instruction } => {
                let blob = self.blob_for(&id).await;
                if !self.page().is_active(&id) {
                    let cancelled = Err(Failure::Unexpected("the attempt was cancelled".into()));
                    (id, Outcome::PartSent { number, result: cancelled })
                } else {
                    let Some(blob) = blob else {
                        return Input::FileUnavailable { id, part: Some(number) };
                    };
                    // A slice of the Blob: the browser streams it, nothing is copied.
                    let slice = blob.slice_with_f64_and_f64(start as f64, end as f64).unwrap_or(blob);
                    let picked = self.is_picked(&id);
                    let result = if !picked || crate::env::is_readable(&slice).await {
                        let progress = self.progress_fn(id, Some(number));
                        self.0.transport.put(id, Some(number), &slice, &instruction, progress).await
                    } else {
                        Err(Failure::FileChanged)
                    };
                    let result = match result {
                        Err(failure) if picked => Err(file_changed_or(failure, &slice, None).await),
                        other => other,
                    };
                    (id, Outcome::PartSent { number, result })
                }
            }
        };
        Input::Outcome { id: outcome.0, outcome: outcome.1, token }
    }

    /// The SHA-256 of bytes `[start, end)` of the attempt's file. A file
    /// held in this page that the browser refuses to read (and not because
    /// the page is going away) is `FileUnreadable`; a kept copy that cannot
    /// be read is gone (the attempt then waits for the file).
    async fn hash(&self, id: &Uuid, start: u64, end: u64) -> std::result::Result<String, Failure> {
        let Some(blob) = self.blob_for(id).await else {
            return Err(Failure::Unexpected("the file's bytes are not available".into()));
        };
        match crate::env::sha256_hex(&blob, start, end).await {
            Ok(hex) => Ok(hex),
            Err(_) if self.is_picked(id) && crate::env::read_failure_is_real().await => Err(Failure::FileUnreadable),
            Err(message) => Err(Failure::Unexpected(message)),
        }
    }

    fn progress_fn(&self, id: Uuid, part: Option<u32>) -> ProgressFn {
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
    fn is_picked(&self, id: &Uuid) -> bool {
        self.page().record(id).is_some_and(|r| self.0.files.borrow().contains_key(&r.blob_key))
    }

    async fn blob_for(&self, id: &Uuid) -> Option<Blob> {
        let key = self.page().record(id)?.blob_key;
        if let Some(blob) = self.0.files.borrow().get(&key) {
            return Some(blob.clone());
        }
        self.0.store.get_blob(&key).await.ok().flatten()
    }

    /// Reconciles every unfinished attempt of this event with the server:
    /// each is driven by exactly one page (Web Locks), starting from what
    /// the server says became of it. Resolves once every lock has an answer.
    pub async fn restore(&self) -> Result<Vec<Uuid>> {
        let records = self.0.store.load_attempts(&self.0.options.event).await?;
        let kept = self.0.store.blob_keys().await.unwrap_or_default();
        let ids = records.iter().map(|r| r.id).collect();
        let ticket = self.page().restore(records, &kept);
        self.ticket_done(ticket).await;
        Ok(ids)
    }

    /// Adds files: each is checked, then every new attempt is durably
    /// recorded (one strict transaction) before anything is sent. The
    /// uploads start right away; the call resolves once the files' bytes
    /// are also kept for a reload (within the caps, where the browser lets
    /// them be stored). One add at a time: a second one waits for the first,
    /// so it sees the first one's attempts.
    pub async fn add(&self, files: Vec<File>) -> Result<Vec<Added>> {
        if self.page().is_closed() {
            return Err(Error::Closed);
        }
        let mine = Completion::default();
        let _done = CompleteOnDrop(mine.clone());
        let previous = self.0.last_add.borrow_mut().replace(mine);
        if let Some(previous) = previous {
            previous.await;
        }
        // On a first visit, files picked while the join is under way wait
        // for its answer (the event's restrictions, or a refused guest
        // code); a join that cannot be answered (offline) does not hold
        // them: the server checks the restrictions at authorize anyway.
        if self.page().is_joining() {
            let answered = Completion::default();
            self.0.join_waiters.borrow_mut().push(answered.clone());
            answered.await;
        }
        let infos: Vec<FileInfo> = files
            .iter()
            .map(|f| FileInfo {
                name: f.name(),
                size: f.size() as u64,
                content_type: normalize_content_type(&f.type_()),
                last_modified: f.last_modified() as i64,
            })
            .collect();
        // A file that may go on from the stored parts of a large upload must
        // be the same bytes in every one of them: the server is asked which
        // parts it holds, then each of them is hashed in the picked file
        // (one part in memory at a time), before the page decides.
        let candidates = self.page().repick_candidates(&infos);
        if !candidates.is_empty() {
            self.learn_stored_parts(&candidates).await;
        }
        let mut digests = vec![Vec::new(); infos.len()];
        // (The page is not held across the hashing: other tasks use it.)
        let checks = self.page().identity_checks(&infos);
        for check in checks {
            for part in check.parts {
                match crate::env::sha256_hex(&files[check.index], part.start, part.end).await {
                    Ok(hex) if !hex.is_empty() => digests[check.index].push((part.number, hex)),
                    // Unreadable, or no WebCrypto: not known to be the same.
                    _ => break,
                }
            }
        }
        let plan = self.page().add(&infos, &digests, now(), &mut CryptoEntropy);
        {
            let mut held = self.0.files.borrow_mut();
            for (index, key) in &plan.hold {
                held.insert(*key, files[*index].clone().into());
            }
        }
        if !plan.new_records.is_empty() {
            // Durable first: if this fails (quota, storage gone), nothing was
            // written and nothing is sent.
            let refs: Vec<&AttemptRecord> = plan.new_records.iter().collect();
            if let Err(e) = self.0.store.put_attempts(&refs, Durability::Strict).await {
                self.page().discard_added(&plan);
                self.0.signal.raise();
                return Err(e);
            }
        }
        // Files are kept within the room the browser says is left.
        let room = crate::env::storage_room().await;
        self.page().set_storage_room(room);
        let ticket = self.page().handle_added(&plan);
        self.ticket_done(ticket).await;
        Ok(plan.outcomes)
    }

    /// Asks the server which parts it holds of these attempts (with the
    /// token of the session that authorized each), for the check of a file
    /// picked again. Without an answer (offline), the parts this browser
    /// knows of are checked, and any other the server lists later lets the
    /// file go again before a byte is sent.
    async fn learn_stored_parts(&self, ids: &[Uuid]) {
        let mut by_token: Vec<(String, Vec<Uuid>)> = Vec::new();
        for id in ids {
            let token = {
                let page = self.page();
                let own = page.record(id).and_then(|r| r.session_token.clone());
                own.or_else(|| page.session().map(|s| s.token.clone()))
            };
            let Some(token) = token else { continue };
            match by_token.iter_mut().find(|(t, _)| *t == token) {
                Some((_, ids)) => ids.push(*id),
                None => by_token.push((token, vec![*id])),
            }
        }
        for (token, ids) in by_token {
            if let Ok(response) = self.0.api.status(&token, &ids).await {
                self.page().learn_stored_parts(&response);
            }
        }
    }

    /// Cancels an attempt: aborts its transfer; it shows as failed with
    /// `cancelled` and can be retried.
    pub fn cancel(&self, id: &Uuid) -> Result<bool> {
        let ok = self.page().cancel(id, now()).ok_or_else(|| Error::NotFound(format!("no attempt {id}")))?;
        self.0.signal.raise();
        Ok(ok)
    }

    /// Pauses an attempt's transfer: what is being sent is aborted, parts
    /// the store holds stay stored, and nothing is sent until
    /// [`Client::resume`] (a reload keeps it paused). False once its bytes
    /// are stored or it ended.
    pub fn pause(&self, id: &Uuid) -> Result<bool> {
        let ok = self.page().pause(id, now()).ok_or_else(|| Error::NotFound(format!("no attempt {id}")))?;
        self.0.signal.raise();
        Ok(ok)
    }

    /// Resumes a paused transfer. False when it was not paused.
    pub fn resume(&self, id: &Uuid) -> Result<bool> {
        let ok = self.page().resume(id, now()).ok_or_else(|| Error::NotFound(format!("no attempt {id}")))?;
        self.0.signal.raise();
        Ok(ok)
    }

    /// Retries a failed attempt (does nothing to an active one).
    pub fn retry(&self, id: &Uuid) -> Result<bool> {
        let changed = self.page().retry(id, now()).ok_or_else(|| Error::NotFound(format!("no attempt {id}")))?;
        self.0.signal.raise();
        Ok(changed)
    }

    /// Forgets an attempt: cancels it if active, deletes its record and (if
    /// unshared) its kept file.
    pub async fn forget(&self, id: &Uuid) -> Result<()> {
        self.page().forget(id, now()).ok_or_else(|| Error::NotFound(format!("no attempt {id}")))?;
        self.0.signal.raise();
        self.0.store.delete_attempts(&[*id]).await?;
        self.page().forgotten(id);
        self.0.signal.raise();
        Ok(())
    }

    /// Removes an upload: nothing more is sent, the server is told to
    /// withdraw it (`DELETE /v1/attempts/{id}`: its URL stops, its reserved
    /// bytes are freed, a media it made leaves the wall and the host's
    /// list), then it is forgotten here. If the server cannot be told, the
    /// error says why and the attempt stays (cancelled), to be removed again.
    pub async fn remove(&self, id: &Uuid) -> Result<()> {
        let token =
            self.page().record(id).ok_or_else(|| Error::NotFound(format!("no attempt {id}")))?.session_token.clone();
        self.page().cancel(id, now());
        self.0.signal.raise();
        if let Some(token) = token {
            match self.0.api.withdraw(&token, *id).await {
                // Not known to the server: it holds nothing of it.
                Ok(()) | Err(Failure::Http { status: 404, .. }) => {}
                Err(failure) => return Err(Error::Request(failure)),
            }
        }
        self.forget(id).await
    }

    /// Asks the server for fresh moderation states.
    pub fn refresh(&self) {
        self.page().refresh();
        self.0.signal.raise();
    }

    /// Subscribes a listener; the id unsubscribes it ([`Client::unsubscribe`]).
    pub fn subscribe(&self, kind: ListenerKind, listener: Function) -> u32 {
        let mut listeners = self.0.listeners.borrow_mut();
        listeners.next += 1;
        let id = listeners.next;
        listeners.list(kind).push((id, listener));
        id
    }

    /// Removes a listener (again: nothing happens).
    pub fn unsubscribe(&self, kind: ListenerKind, id: u32) {
        self.0.listeners.borrow_mut().list(kind).retain(|(i, _)| *i != id);
    }

    fn call(&self, kind: ListenerKind, value: &JsValue) {
        let listeners: Vec<Function> =
            self.0.listeners.borrow_mut().list(kind).iter().map(|(_, f)| f.clone()).collect();
        for listener in listeners {
            let _ = listener.call1(&JsValue::NULL, value);
        }
    }

    fn notify(&self, id: &Uuid) {
        if self.0.listeners.borrow().change.is_empty() {
            return;
        }
        if let Some(view) = self.view_js(id) {
            self.call(ListenerKind::Change, &view);
        }
    }

    /// Why attempt records cannot be saved in IndexedDB right now (quota,
    /// storage gone, another page upgraded the database); `None` once a save
    /// works again. While it lasts, the attempts whose records wait wait too.
    pub fn storage_error(&self) -> Option<ErrorInfo> {
        self.page().storage_error().map(|e| ErrorInfo { code: e.code.as_str().into(), message: e.message.clone() })
    }

    /// How many writes of attempt records failed in a row (0 once one
    /// works); with [`Client::storage_error`], for diagnostics.
    pub fn failed_writes(&self) -> u32 {
        self.page().failed_writes()
    }

    /// Why the server refused to open a guest session (a wrong guest code,
    /// no such event), until a join works.
    pub fn session_error(&self) -> Option<ErrorInfo> {
        self.0
            .page
            .borrow()
            .session_error()
            .map(|e| ErrorInfo { code: e.code.as_str().into(), message: e.message.clone() })
    }

    /// One attempt's view.
    pub fn view(&self, id: &Uuid) -> Option<AttemptView> {
        self.0.page.borrow().view(id)
    }

    /// One attempt's view, as JS sees it.
    pub fn view_js(&self, id: &Uuid) -> Option<JsValue> {
        self.view(id).and_then(|v| to_js(&v).ok())
    }

    /// Every attempt's view, oldest first.
    pub fn views(&self) -> Vec<AttemptView> {
        self.0.page.borrow().views()
    }

    /// One attempt's record.
    pub fn record(&self, id: &Uuid) -> Option<AttemptRecord> {
        self.0.page.borrow().record(id).cloned()
    }

    /// Every record, oldest first.
    pub fn records(&self) -> Vec<AttemptRecord> {
        self.0.page.borrow().records().cloned().collect()
    }

    /// Whether every attempt this page drives is finished (or waits for the
    /// guest), with nothing in flight and nothing left to store.
    pub fn is_idle(&self) -> bool {
        self.0.inputs.borrow().is_empty() && self.0.page.borrow().is_idle()
    }

    /// The answer of `navigator.storage.persist()`, once known.
    pub fn persisted(&self) -> Option<bool> {
        self.0.persisted.get()
    }

    /// The event, once a session exists.
    pub fn event(&self) -> Option<EventInfo> {
        self.0.page.borrow().session().map(|s| s.event.clone())
    }

    /// Whether a session token is held.
    pub fn has_session(&self) -> bool {
        self.0.page.borrow().session().is_some()
    }

    /// Stops: aborts transfers, releases every lock, leaves the channel.
    /// Records stay in IndexedDB for the next visit.
    pub fn close(&self) {
        if self.page().is_closed() {
            return;
        }
        self.page().close();
        // The aborts and lock releases the page asks for.
        self.step();
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
        for (_, done) in self.0.tickets.borrow_mut().drain(..) {
            done.complete();
        }
        for waiter in self.0.join_waiters.borrow_mut().drain(..) {
            waiter.complete();
        }
        self.0.signal.raise();
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
