//! The driver: carries the core's [`Page`] out into the browser.
//!
//! Every decision is the page model's. This module only performs its
//! effects — IndexedDB reads and writes, Web Locks, requests, the
//! BroadcastChannel, the app's listeners — and feeds what they answer back
//! as inputs. Tasks that wait on the browser never touch the page: they
//! queue their answer and wake the loop, which hands it over. The loop
//! sleeps until an input arrives or [`Page::poll_timeout`].
//!
//! Here: the loop, and the guest's actions (`forget`, `pause`, …) handed
//! to the page. Beside it: `add.rs` takes a pick (checks, the identity of a
//! file picked again, hashes started beside the strict write), `requests.rs` carries out what the page sends (the
//! join, the API, the bytes, hashing), `listeners.rs` calls the app back,
//! `queries.rs` answers what the app reads, `options.rs` holds the options
//! and the network adapters.

use std::cell::{Cell, RefCell, RefMut};
use std::collections::VecDeque;
use std::rc::Rc;

use js_sys::Function;
use serde::{Deserialize, Serialize};
use upload_once_core::attempt::AttemptRecord;
use upload_once_core::idmap::IdMap;
use upload_once_core::page::{Effect, Input, Page, Session, Ticket};
use upload_once_core::retry::Failure;
use upload_once_core::time::UnixMillis;
use upload_once_core::view::ErrorInfo;
use upload_once_core::wire::EventInfo;
use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;
use web_sys::{Blob, File};

use futures_channel::oneshot;

use crate::env::{CryptoEntropy, Signal, is_online, now, request_persistence};
use crate::error::{Error, Result};
use crate::serde_js::{from_js, to_js};
use crate::store::IndexedDbStore;
use crate::tabs::{Channel, LockHandle, lock_attempt};
use crate::transport::{Api, Transport};

mod add;
mod background;
mod listeners;
mod options;
mod queries;
mod requests;

pub use listeners::ListenerKind;
use listeners::Listeners;
pub use options::{Adapters, Options};

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
    /// Whole-file hashes started while an add's records were written
    /// ([`AddPlan::hash_ahead`](upload_once_core::page::AddPlan::hash_ahead)),
    /// by attempt: the promise and the file's size.
    hashes_ahead: RefCell<IdMap<(js_sys::Promise, u64)>>,
    /// When each attempt's picked file was last read whole by its hash
    /// (ms): a PUT soon after needs no other proof that it still reads.
    read_whole_at: RefCell<IdMap<f64>>,
    locks: RefCell<IdMap<LockHandle>>,
    tickets: RefCell<Vec<(Ticket, oneshot::Sender<()>)>>,
    /// The last `add`, which the next one waits for.
    last_add: RefCell<Option<oneshot::Receiver<()>>>,
    /// `add`s waiting for a join under way to answer.
    join_waiters: RefCell<Vec<oneshot::Sender<()>>>,
    listeners: RefCell<Listeners>,
    persisted: Cell<Option<bool>>,
    /// The online state the page was last told.
    online: Cell<Option<bool>>,
    channel: RefCell<Option<Channel>>,
    window_listeners: RefCell<Vec<WindowListener>>,
}

/// A listener on the window (`online`, `offline`), by event name, removed
/// when the client closes.
type WindowListener = (&'static str, Closure<dyn FnMut()>);

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
            hashes_ahead: RefCell::new(IdMap::default()),
            read_whole_at: RefCell::new(IdMap::default()),
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
        if client.0.options.hash_file_max_bytes > 0 {
            crate::env::prepare_hash_worker();
        }
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
        // Storage taken by a newer version in another tab is reported before
        // any answer is handed over: nothing then acts on a state that could
        // not be written.
        if let Some(lost) = self.0.store.lost() {
            if self.page().storage_error().is_none() {
                self.page().storage_lost(core_error(&lost));
            }
        }
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
                // Dropping a waiter's sender wakes it.
                self.0.join_waiters.borrow_mut().clear();
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
            Effect::Store { records, delete, durability } => self.spawn(async move |me| {
                let refs: Vec<&AttemptRecord> = records.iter().collect();
                let result = me.0.store.write_attempts(&refs, &delete, durability).await;
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
            Effect::Changed(id) => {
                // A hash started ahead for an attempt that ended before it
                // asked for it (cancelled, failed) is never taken.
                if !self.page().is_active(&id) {
                    self.0.hashes_ahead.borrow_mut().remove(&id);
                }
                self.notify(&id);
            }
            Effect::Removed(id) => {
                self.0.hashes_ahead.borrow_mut().remove(&id);
                self.call(ListenerKind::Remove, &JsValue::from_str(&id.to_string()));
            }
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
            Effect::BusyChanged(busy) => self.call(ListenerKind::Busy, &JsValue::from_bool(busy)),
            Effect::FilesNotKept(e) => {
                web_sys::console::warn_1(&format!("upload-once: files are not kept across reloads ({e})").into());
            }
            // Dropping a waiter's sender wakes it.
            Effect::Done(ticket) => self.0.tickets.borrow_mut().retain(|(t, _)| *t != ticket),
        }
    }

    /// Waits until the page says `ticket` is done, then answers whether its
    /// action failed: its write refused (with the store's code and words),
    /// or the uploader closed meanwhile (what was not written then never
    /// will be).
    async fn ticket_result(&self, ticket: Ticket) -> Result<()> {
        self.ticket_done(ticket).await;
        let mut page = self.page();
        match page.take_failure(ticket) {
            Some(e) => Err(Error::Stored(e)),
            None if page.is_closed() => Err(Error::Closed),
            None => Ok(()),
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
        let (done, answer) = oneshot::channel();
        self.0.tickets.borrow_mut().push((ticket, done));
        self.0.signal.raise();
        let _ = answer.await;
    }

    /// Reconciles every unfinished attempt of this event with the server:
    /// each is driven by exactly one page (Web Locks), starting from what
    /// the server says became of it. Resolves once every lock has an answer.
    pub async fn restore(&self) -> Result<Vec<Uuid>> {
        self.restore_only(None).await
    }

    /// [`Client::restore`], for the attempts of `only` when given (the
    /// service worker settling a Background Fetch: the others are the
    /// pages').
    pub async fn restore_only(&self, only: Option<&[Uuid]>) -> Result<Vec<Uuid>> {
        let mut records = self.0.store.load_attempts(&self.0.options.event).await?;
        records.retain(|r| only.is_none_or(|ids| ids.contains(&r.id)));
        let kept = self.0.store.blob_keys().await.unwrap_or_default();
        let ids = records.iter().map(|r| r.id).collect();
        let ticket = self.page().restore(records, &kept);
        self.ticket_done(ticket).await;
        Ok(ids)
    }

    /// One of the guest's actions on an attempt (`cancel`, `pause`,
    /// `resume`, `retry`): the page's answer, then the driver wakes to carry
    /// it out. `NotFound` for an id the page does not know.
    fn act(&self, id: &Uuid, action: fn(&mut Page, &Uuid, UnixMillis) -> Option<bool>) -> Result<bool> {
        let answer = action(&mut self.page(), id, now()).ok_or_else(|| not_found(id))?;
        self.0.signal.raise();
        Ok(answer)
    }

    /// Cancels an attempt: aborts its transfer; it shows as failed with
    /// `cancelled` and can be retried.
    pub fn cancel(&self, id: &Uuid) -> Result<bool> {
        self.act(id, Page::cancel)
    }

    /// Pauses an attempt's transfer: what is being sent is aborted, parts
    /// the store holds stay stored, and nothing is sent until
    /// [`Client::resume`] (a reload keeps it paused). False once its bytes
    /// are stored or it ended.
    pub fn pause(&self, id: &Uuid) -> Result<bool> {
        self.act(id, Page::pause)
    }

    /// Resumes a paused transfer. False when it was not paused.
    pub fn resume(&self, id: &Uuid) -> Result<bool> {
        self.act(id, Page::resume)
    }

    /// Retries a failed attempt (does nothing to an active one).
    pub fn retry(&self, id: &Uuid) -> Result<bool> {
        self.act(id, Page::retry)
    }

    /// Forgets an attempt: cancels it if active, deletes its record and (if
    /// unshared) its kept file.
    pub async fn forget(&self, id: &Uuid) -> Result<()> {
        let ticket = self.page().forget(id, now()).ok_or_else(|| not_found(id))?;
        self.ticket_result(ticket).await
    }

    /// Removes an upload: nothing more is sent, the server is told to
    /// withdraw it (`DELETE /v1/attempts/{id}`: its URL stops, its reserved
    /// bytes are freed, a media it made leaves the wall and the host's
    /// list), then it is forgotten here. If the server cannot be told, the
    /// error says why and the attempt stays (cancelled), to be removed again.
    pub async fn remove(&self, id: &Uuid) -> Result<()> {
        let token = self.page().record(id).ok_or_else(|| not_found(id))?.session_token.clone();
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
        // Dropping the waiters' senders wakes them.
        self.0.tickets.borrow_mut().clear();
        self.0.join_waiters.borrow_mut().clear();
        self.0.signal.raise();
    }
}

/// The error for an attempt id this page does not know.
fn not_found(id: &Uuid) -> Error {
    Error::NotFound(format!("no attempt {id}"))
}
