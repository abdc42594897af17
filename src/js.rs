//! The JS API: the `Uploader` class, camelCase, Promises, typed.

use js_sys::{Array, Promise};
use upload_once_core::options::UploaderOptions;
use upload_once_core::page::Added;
use upload_once_core::restrictions::{PickLimits, Restrictions};
use upload_once_core::retry::RetryPolicy;
use upload_once_core::view::{AddOutcome, ErrorInfo};
use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::File;

use crate::client::{Adapters, Client, ListenerKind, Options};
use crate::error::Error;
use crate::serde_js::{from_js, to_js};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("uploader.d.ts");

/// Parses `UploaderOptions`, refusing unknown or mistyped fields.
pub fn parse_options(value: JsValue) -> Result<Options, Error> {
    if !value.is_object() {
        return Err(Error::InvalidOptions("Uploader.open takes an options object".into()));
    }
    let o: UploaderOptions = from_js(value).map_err(|e| Error::InvalidOptions(format!("invalid options: {e}")))?;
    let mut options = Options::new(&o.api_base, &o.event, &o.guest_code);
    if let Some(c) = o.concurrency {
        options.concurrency = c as usize;
    }
    options.restrictions =
        Restrictions { max_file_bytes: o.max_file_bytes, allowed_types: o.allowed_types.unwrap_or_default() };
    options.pick_limits = PickLimits { max_files: o.max_files_per_pick, max_bytes: o.max_pick_bytes };
    options.keep_file_max_bytes = o.keep_file_max_bytes.unwrap_or(options.keep_file_max_bytes);
    options.keep_files_total_bytes = o.keep_files_total_bytes.unwrap_or(options.keep_files_total_bytes);
    options.hash_file_max_bytes = o.hash_file_max_bytes.unwrap_or(options.hash_file_max_bytes);
    if let Some(r) = o.retry {
        let d = RetryPolicy::default();
        options.retry = RetryPolicy {
            base_ms: r.base_ms.unwrap_or(d.base_ms),
            cap_ms: r.cap_ms.unwrap_or(d.cap_ms),
            max_retries: r.max_retries.unwrap_or(d.max_retries),
        };
    }
    if let Some(name) = o.db_name {
        options.db_name = name;
    }
    Ok(options)
}

fn parse_id(id: &str) -> Result<Uuid, Error> {
    Uuid::try_parse(id).map_err(|_| Error::NotFound(format!("`{id}` is not an attempt id")))
}

/// Attempt ids from an optional array of strings (`None` for `undefined`;
/// a string that is no id is left out).
fn ids_of(value: &JsValue) -> Option<Vec<Uuid>> {
    if value.is_undefined() || value.is_null() {
        return None;
    }
    Some(Array::from(value).iter().filter_map(|v| Uuid::try_parse(&v.as_string()?).ok()).collect())
}

/// Collects `File`s from a FileList or an array.
fn files_of(value: &JsValue) -> Result<Vec<File>, Error> {
    let list = Array::from(value);
    (0..list.length())
        .map(|i| {
            list.get(i)
                .dyn_into::<File>()
                .map_err(|_| Error::InvalidOptions("add() takes a FileList or an array of File objects".into()))
        })
        .collect()
}

fn outcome(client: &Client, added: Added) -> Option<AddOutcome> {
    let (status, id) = match added {
        Added::Refused { file_name, error } => {
            let error = ErrorInfo { code: error.code.as_str().into(), message: error.message };
            return Some(AddOutcome::Refused { ok: false, file_name, error });
        }
        Added::NotSameFile { id, waiting } => {
            let attempt = client.view(&id)?;
            return Some(AddOutcome::Accepted {
                ok: true,
                status: "not_same_file",
                attempt,
                waiting: Some(waiting.to_string()),
            });
        }
        Added::New(id) => ("new", id),
        Added::Reattached(id) => ("reattached", id),
        Added::Duplicate(id) => ("duplicate", id),
    };
    Some(AddOutcome::Accepted { ok: true, status, attempt: client.view(&id)?, waiting: None })
}

/// A JS function that unsubscribes a listener (calling it again does
/// nothing).
fn unsubscriber(client: &Client, kind: ListenerKind, id: u32) -> js_sys::Function {
    let client = client.clone();
    Closure::<dyn FnMut()>::new(move || client.unsubscribe(kind, id)).into_js_value().unchecked_into()
}

/// Uploads that are stored exactly once.
///
/// Every file the guest picks gets an attempt id at once, durably recorded in
/// IndexedDB before the first byte leaves; every retry, after any reload,
/// uses the same id, and the server confirms each attempt exactly once.
#[wasm_bindgen]
pub struct Uploader {
    client: Client,
}

#[wasm_bindgen]
impl Uploader {
    /// Opens the uploader: IndexedDB, the stored guest session, and the
    /// attempts of earlier visits (call `restore()` to continue them). It
    /// makes no network request: on a first visit the event is joined in
    /// the background (`onSessionChange`).
    #[wasm_bindgen(unchecked_return_type = "Promise<Uploader>")]
    pub fn open(#[wasm_bindgen(unchecked_param_type = "UploaderOptions")] options: JsValue) -> Promise {
        future_to_promise(async move {
            let options = parse_options(options)?;
            let adapters = Adapters::browser(&options);
            let client = Client::open(options, adapters).await?;
            Ok(Uploader { client }.into())
        })
    }

    /// Calls `listener` with an attempt whenever it changes (state,
    /// progress). Returns a function that unsubscribes it.
    #[wasm_bindgen(js_name = onChange, unchecked_return_type = "() => void")]
    pub fn on_change(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(attempt: AttemptView) => void")] listener: js_sys::Function,
    ) -> js_sys::Function {
        let id = self.client.subscribe(ListenerKind::Change, listener);
        unsubscriber(&self.client, ListenerKind::Change, id)
    }

    /// Calls `listener` with the id of an attempt that was forgotten (here or
    /// in another tab). Returns a function that unsubscribes it.
    #[wasm_bindgen(js_name = onRemove, unchecked_return_type = "() => void")]
    pub fn on_remove(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(id: string) => void")] listener: js_sys::Function,
    ) -> js_sys::Function {
        let id = self.client.subscribe(ListenerKind::Remove, listener);
        unsubscriber(&self.client, ListenerKind::Remove, id)
    }

    /// The file's bytes when this page or IndexedDB still holds them (for a
    /// thumbnail after a reload), else `null`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Blob | null>")]
    pub fn file(&self, id: &str) -> Promise {
        let client = self.client.clone();
        let id = parse_id(id);
        future_to_promise(async move { Ok(client.file(&id?).await.map(JsValue::from).unwrap_or(JsValue::NULL)) })
    }

    /// Adds files, one outcome per file in the order given. Each is checked
    /// against the app's and the event's restrictions, then all new attempts
    /// are durably recorded before any network. Resolves once the files are
    /// also kept for a reload (`fileKept`). A file picked again for an attempt
    /// that `needs_file` is re-attached to it (same id).
    #[wasm_bindgen(unchecked_return_type = "Promise<AddOutcome[]>")]
    pub fn add(&self, #[wasm_bindgen(unchecked_param_type = "FileList | File[]")] files: JsValue) -> Promise {
        let client = self.client.clone();
        future_to_promise(async move {
            let files = files_of(&files)?;
            let added = client.add(files).await?;
            let outcomes: Vec<AddOutcome> = added.into_iter().filter_map(|a| outcome(&client, a)).collect();
            Ok(to_js(&outcomes).map_err(Error::InvalidOptions)?)
        })
    }

    /// After a reload: asks the server what became of every unfinished
    /// attempt and continues from there (only one tab drives each attempt).
    #[wasm_bindgen(unchecked_return_type = "Promise<AttemptView[]>")]
    pub fn restore(&self) -> Promise {
        self.restore_only(JsValue::UNDEFINED)
    }

    /// `restore()` for the attempts of `ids` only (the service worker
    /// settling a Background Fetch: the others are the pages').
    #[wasm_bindgen(js_name = restoreOnly, unchecked_return_type = "Promise<AttemptView[]>")]
    pub fn restore_only(&self, #[wasm_bindgen(unchecked_param_type = "string[]")] ids: JsValue) -> Promise {
        let client = self.client.clone();
        let only = ids_of(&ids);
        future_to_promise(async move {
            client.restore_only(only.as_deref()).await?;
            Ok(to_js(&client.views()).map_err(Error::InvalidOptions)?)
        })
    }

    /// Every attempt of this event, oldest first.
    #[wasm_bindgen(unchecked_return_type = "AttemptView[]")]
    pub fn list(&self) -> JsValue {
        to_js(&self.client.views()).unwrap_or_else(|_| Array::new().into())
    }

    /// One attempt.
    #[wasm_bindgen(unchecked_return_type = "AttemptView | undefined")]
    pub fn get(&self, id: &str) -> JsValue {
        Uuid::try_parse(id).ok().and_then(|id| self.client.view_js(&id)).unwrap_or(JsValue::UNDEFINED)
    }

    /// Retries a failed attempt. Resolves to whether anything changed (a
    /// second click while it runs changes nothing).
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn retry(&self, id: &str) -> Promise {
        let result = parse_id(id).and_then(|id| self.client.retry(&id));
        future_to_promise(async move { Ok(JsValue::from_bool(result?)) })
    }

    /// Cancels an attempt (aborts its transfer). Resolves to false when it
    /// is already confirmed, rejected or expired.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn cancel(&self, id: &str) -> Promise {
        let result = parse_id(id).and_then(|id| self.client.cancel(&id));
        future_to_promise(async move { Ok(JsValue::from_bool(result?)) })
    }

    /// Pauses an attempt's transfer: what is being sent is aborted, parts
    /// the server holds stay stored, and nothing is sent until `resume` (a
    /// reload keeps it paused). Resolves to false once its bytes are stored
    /// or it ended.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn pause(&self, id: &str) -> Promise {
        let result = parse_id(id).and_then(|id| self.client.pause(&id));
        future_to_promise(async move { Ok(JsValue::from_bool(result?)) })
    }

    /// Resumes a paused transfer. Resolves to false when it was not paused.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn resume(&self, id: &str) -> Promise {
        let result = parse_id(id).and_then(|id| self.client.resume(&id));
        future_to_promise(async move { Ok(JsValue::from_bool(result?)) })
    }

    /// Forgets an attempt on this device: cancels it and deletes its record
    /// and kept file. The server keeps what it holds (until the attempt
    /// expires); `remove` withdraws it there too.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn forget(&self, id: &str) -> Promise {
        let client = self.client.clone();
        let id = parse_id(id);
        future_to_promise(async move {
            client.forget(&id?).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Removes an upload: tells the server to withdraw it (its URL stops,
    /// its reserved bytes are freed, a media it made leaves the wall and the
    /// host's list), then forgets it here. Rejects with the server's or the
    /// network's error, the attempt kept (cancelled), if that fails.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn remove(&self, id: &str) -> Promise {
        let client = self.client.clone();
        let id = parse_id(id);
        future_to_promise(async move {
            client.remove(&id?).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The first step of `handOver` (a function of the package, which
    /// apps call rather than these): every file not sent yet is hashed and
    /// authorized at once, and no new transfer starts.
    #[wasm_bindgen(js_name = prepareHandOver)]
    pub fn prepare_hand_over(&self) {
        self.client.prepare_hand_over();
    }

    /// Whether every file of a hand-over being prepared has its signed URL.
    #[wasm_bindgen(getter, js_name = handOverReady)]
    pub fn hand_over_ready(&self) -> bool {
        self.client.hand_over_ready()
    }

    /// The step of `handOver` that hands the transfers in one PUT over:
    /// each is paused here, stored as handed over, then let go. Their ids
    /// and PUTs (`{ id, method, url, headers }`).
    #[wasm_bindgen(js_name = handOverNow, unchecked_return_type = "HandedOverPut[]")]
    pub fn hand_over_now(&self) -> Array {
        let puts = Array::new();
        for (id, upload) in self.client.hand_over() {
            if let Ok(put) = to_js(&upload) {
                let _ = js_sys::Reflect::set(&put, &"id".into(), &id.to_string().into());
                puts.push(&put);
            }
        }
        puts
    }

    /// The step of `takeBack` that drives the attempts handed over (those of
    /// `ids`, when given) here again, from what the server says. Their ids.
    #[wasm_bindgen(js_name = takeBackNow, unchecked_return_type = "string[]")]
    pub fn take_back_now(&self, #[wasm_bindgen(unchecked_param_type = "string[] | undefined")] ids: JsValue) -> Array {
        let only = ids_of(&ids);
        let taken = self.client.take_back(only.as_deref());
        taken.iter().map(|id| JsValue::from_str(&id.to_string())).collect()
    }

    /// Whose hand-overs these are: `[dbName, apiBase, event, guestCode]`.
    #[wasm_bindgen(getter, js_name = handOverOwner, unchecked_return_type = "[string, string, string, string]")]
    pub fn hand_over_owner(&self) -> Array {
        self.client.owner().iter().map(|s| JsValue::from_str(s)).collect()
    }

    /// Asks the server for fresh moderation states of confirmed attempts.
    pub fn refresh(&self) {
        self.client.refresh();
    }

    /// The answer of `navigator.storage.persist()`: `true` when the browser
    /// promised to keep this site's storage, `null` until it answered (or
    /// where the browser has no such promise).
    #[wasm_bindgen(getter, unchecked_return_type = "boolean | null")]
    pub fn persisted(&self) -> JsValue {
        self.client.persisted().map_or(JsValue::NULL, JsValue::from_bool)
    }

    /// Why this page cannot save attempt records in IndexedDB right now
    /// (`quota_exceeded`, or `storage_unavailable`, e.g. after another page
    /// opened a newer version of the database), else `null`. While it lasts
    /// the affected attempts wait; saving is tried again, every 30 s at most.
    #[wasm_bindgen(getter, js_name = storageError, unchecked_return_type = "StorageErrorInfo | null")]
    pub fn storage_error(&self) -> JsValue {
        self.client.storage_error().and_then(|e| to_js(&e).ok()).unwrap_or(JsValue::NULL)
    }

    /// Calls `listener` when saving attempt records starts failing (with the
    /// error) and when it works again (with `null`). Returns a function that
    /// unsubscribes it.
    #[wasm_bindgen(js_name = onStorageError, unchecked_return_type = "() => void")]
    pub fn on_storage_error(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(error: StorageErrorInfo | null) => void")] listener: js_sys::Function,
    ) -> js_sys::Function {
        let id = self.client.subscribe(ListenerKind::Storage, listener);
        unsubscriber(&self.client, ListenerKind::Storage, id)
    }

    /// Why the server refused to open a guest session for this page
    /// (`wrong_guest_code`, `not_found` for an unknown event), else `null`.
    /// While it lasts, each attempt added fails with the same code.
    #[wasm_bindgen(getter, js_name = sessionError, unchecked_return_type = "SessionErrorInfo | null")]
    pub fn session_error(&self) -> JsValue {
        self.client.session_error().and_then(|e| to_js(&e).ok()).unwrap_or(JsValue::NULL)
    }

    /// Calls `listener` when the guest session is joined (with the event) or
    /// refused (with the error). `Uploader.open` does not wait for the join
    /// on a first visit. Returns a function that unsubscribes it.
    #[wasm_bindgen(js_name = onSessionChange, unchecked_return_type = "() => void")]
    pub fn on_session_change(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(event: EventInfo | null, error: SessionErrorInfo | null) => void")]
        listener: js_sys::Function,
    ) -> js_sys::Function {
        let id = self.client.subscribe(ListenerKind::Session, listener);
        unsubscriber(&self.client, ListenerKind::Session, id)
    }

    /// The event (title and restrictions), once joined.
    #[wasm_bindgen(getter, unchecked_return_type = "EventInfo | null")]
    pub fn event(&self) -> JsValue {
        self.client.event().and_then(|e| to_js(&e).ok()).unwrap_or(JsValue::NULL)
    }

    /// Whether every attempt this page drives is finished or waits for the
    /// guest, with nothing in flight.
    #[wasm_bindgen(getter)]
    pub fn idle(&self) -> bool {
        self.client.is_idle()
    }

    /// Whether this page drives an upload that goes on without the guest:
    /// a file being hashed, sent or confirmed, or waiting to retry. Not
    /// busy: everything finished, paused, or waiting for a file to be
    /// picked again. Hold a Screen Wake Lock while it is `true` (the guest
    /// page does), so a phone does not sleep mid-upload.
    #[wasm_bindgen(getter)]
    pub fn busy(&self) -> bool {
        self.client.is_busy()
    }

    /// Calls `listener` each time `busy` changes, with its new value.
    /// Returns a function that unsubscribes it.
    #[wasm_bindgen(js_name = onBusyChange, unchecked_return_type = "() => void")]
    pub fn on_busy_change(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(busy: boolean) => void")] listener: js_sys::Function,
    ) -> js_sys::Function {
        let id = self.client.subscribe(ListenerKind::Busy, listener);
        unsubscriber(&self.client, ListenerKind::Busy, id)
    }

    /// Stops this uploader (transfers are aborted, locks released); the
    /// attempts stay recorded for the next visit.
    pub fn close(&self) {
        self.client.close();
    }
}

impl Drop for Uploader {
    fn drop(&mut self) {
        self.client.close();
    }
}
