//! The JS API: the `Uploader` class, camelCase, Promises, typed.

use js_sys::{Array, Object, Promise, Reflect};
use upload_once_core::restrictions::Restrictions;
use upload_once_core::retry::RetryPolicy;
use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::File;

use crate::client::{Adapters, Added, Client, Options};
use crate::error::Error;
use crate::jsio::{Read, error_info_to_js, event_to_js};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("uploader.d.ts");

const OPTION_NAMES: &[&str] = &[
    "apiBase", "event", "guestCode", "concurrency", "maxFileBytes", "allowedTypes", "keepFileMaxBytes",
    "keepFilesTotalBytes", "retry", "dbName",
];
const RETRY_NAMES: &[&str] = &["baseMs", "capMs", "maxRetries"];

fn unknown_key(value: &JsValue, known: &[&str]) -> Option<String> {
    let obj = value.dyn_ref::<Object>()?;
    Object::keys(obj).iter().filter_map(|k| k.as_string()).find(|k| !known.contains(&k.as_str()))
}

/// Parses `UploaderOptions`, refusing unknown or mistyped fields.
pub fn parse_options(value: JsValue) -> Result<Options, Error> {
    let bad = |what: &str| Error::InvalidOptions(format!("invalid option `{what}`"));
    if !value.is_object() {
        return Err(Error::InvalidOptions("Uploader.open takes an options object".into()));
    }
    if let Some(k) = unknown_key(&value, OPTION_NAMES) {
        return Err(Error::InvalidOptions(format!("unknown option `{k}`")));
    }
    let r = Read(&value);
    let mut options = Options::new(&r.str("apiBase").map_err(bad)?, &r.str("event").map_err(bad)?, &r.str("guestCode").map_err(bad)?);
    let opt_u64 = |key: &'static str| -> Result<Option<u64>, Error> { r.opt(key).map(|_| r.u64(key).map_err(bad)).transpose() };
    if let Some(c) = opt_u64("concurrency")? {
        options.concurrency = c as usize;
    }
    options.restrictions = Restrictions {
        max_file_bytes: opt_u64("maxFileBytes")?,
        allowed_types: r.opt("allowedTypes").map(|_| r.strings("allowedTypes").map_err(bad)).transpose()?.unwrap_or_default(),
    };
    if let Some(v) = opt_u64("keepFileMaxBytes")? {
        options.keep_file_max_bytes = v;
    }
    if let Some(v) = opt_u64("keepFilesTotalBytes")? {
        options.keep_files_total_bytes = v;
    }
    if let Some(retry) = r.opt("retry") {
        if let Some(k) = unknown_key(&retry, RETRY_NAMES) {
            return Err(Error::InvalidOptions(format!("unknown option `retry.{k}`")));
        }
        let rr = Read(&retry);
        let get = |key: &'static str| rr.opt(key).map(|_| rr.u64(key).map_err(bad)).transpose();
        let d = RetryPolicy::default();
        options.retry = RetryPolicy {
            base_ms: get("baseMs")?.unwrap_or(d.base_ms),
            cap_ms: get("capMs")?.unwrap_or(d.cap_ms),
            max_retries: get("maxRetries")?.map_or(d.max_retries, |n| n.min(u64::from(u32::MAX)) as u32),
        };
    }
    if r.opt("dbName").is_some() {
        options.db_name = r.str("dbName").map_err(bad)?;
    }
    Ok(options)
}

fn parse_id(id: &str) -> Result<Uuid, Error> {
    Uuid::try_parse(id).map_err(|_| Error::NotFound(format!("`{id}` is not an attempt id")))
}

/// Collects `File`s from a FileList or an array.
fn files_of(value: &JsValue) -> Result<Vec<File>, Error> {
    let list = Array::from(value);
    (0..list.length())
        .map(|i| {
            list.get(i).dyn_into::<File>().map_err(|_| Error::InvalidOptions("add() takes a FileList or an array of File objects".into()))
        })
        .collect()
}

fn set(obj: &Object, key: &str, value: &JsValue) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), value);
}

fn outcome_js(client: &Client, added: &Added) -> JsValue {
    let obj = Object::new();
    match added {
        Added::Refused { file_name, error } => {
            set(&obj, "ok", &JsValue::FALSE);
            set(&obj, "fileName", &JsValue::from_str(file_name));
            set(&obj, "error", &error_info_to_js(error));
        }
        Added::New(id) | Added::Reattached(id) | Added::Duplicate(id) => {
            let status = match added {
                Added::New(_) => "new",
                Added::Reattached(_) => "reattached",
                _ => "duplicate",
            };
            set(&obj, "ok", &JsValue::TRUE);
            set(&obj, "status", &JsValue::from_str(status));
            set(&obj, "attempt", &client.view(id).unwrap_or(JsValue::NULL));
        }
    }
    obj.into()
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
    /// Opens the uploader: IndexedDB, the guest session (joining the event
    /// on first use), and the attempts of earlier visits (call `restore()`
    /// to continue them).
    #[wasm_bindgen(unchecked_return_type = "Promise<Uploader>")]
    pub fn open(#[wasm_bindgen(unchecked_param_type = "UploaderOptions")] options: JsValue) -> Promise {
        future_to_promise(async move {
            let options = parse_options(options)?;
            let adapters = Adapters::browser(&options);
            let client = Client::open(options, adapters).await?;
            Ok(Uploader { client }.into())
        })
    }

    /// Calls `listener` with an attempt whenever it changes (state, progress).
    #[wasm_bindgen(js_name = onChange)]
    pub fn on_change(&self, #[wasm_bindgen(unchecked_param_type = "(attempt: AttemptView) => void")] listener: js_sys::Function) {
        self.client.on_change(listener);
    }

    /// Calls `listener` with the id of an attempt that was forgotten (here or
    /// in another tab).
    #[wasm_bindgen(js_name = onRemove)]
    pub fn on_remove(&self, #[wasm_bindgen(unchecked_param_type = "(id: string) => void")] listener: js_sys::Function) {
        self.client.on_remove(listener);
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
            Ok(added.iter().map(|a| outcome_js(&client, a)).collect::<Array>().into())
        })
    }

    /// After a reload: asks the server what became of every unfinished
    /// attempt and continues from there (only one tab drives each attempt).
    #[wasm_bindgen(unchecked_return_type = "Promise<AttemptView[]>")]
    pub fn restore(&self) -> Promise {
        let client = self.client.clone();
        future_to_promise(async move {
            client.restore().await?;
            Ok(client.views().into_iter().collect::<Array>().into())
        })
    }

    /// Every attempt of this event, oldest first.
    #[wasm_bindgen(unchecked_return_type = "AttemptView[]")]
    pub fn list(&self) -> Array {
        self.client.views().into_iter().collect()
    }

    /// One attempt.
    #[wasm_bindgen(unchecked_return_type = "AttemptView | undefined")]
    pub fn get(&self, id: &str) -> JsValue {
        Uuid::try_parse(id).ok().and_then(|id| self.client.view(&id)).unwrap_or(JsValue::UNDEFINED)
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

    /// Forgets an attempt: cancels it and deletes its record and kept file.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn forget(&self, id: &str) -> Promise {
        let client = self.client.clone();
        let id = parse_id(id);
        future_to_promise(async move {
            client.forget(&id?).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Asks the server for fresh moderation states of confirmed attempts.
    pub fn refresh(&self) {
        self.client.refresh();
    }

    /// The answer of `navigator.storage.persist()`: `true` when the browser
    /// promised to keep this site's storage, `null` until it answered.
    #[wasm_bindgen(getter)]
    pub fn persisted(&self) -> Option<bool> {
        self.client.persisted()
    }

    /// Why this page cannot save attempt records in IndexedDB right now
    /// (`quota_exceeded`, or `storage_unavailable`, e.g. after another page
    /// opened a newer version of the database), else `null`. While it lasts
    /// the affected attempts wait; saving is tried again, every 30 s at most.
    #[wasm_bindgen(getter, js_name = storageError, unchecked_return_type = "StorageErrorInfo | null")]
    pub fn storage_error(&self) -> JsValue {
        self.client.storage_error().map_or(JsValue::NULL, |e| error_info_to_js(&e))
    }

    /// Calls `listener` when saving attempt records starts failing (with the
    /// error) and when it works again (with `null`).
    #[wasm_bindgen(js_name = onStorageError)]
    pub fn on_storage_error(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(error: StorageErrorInfo | null) => void")] listener: js_sys::Function,
    ) {
        self.client.on_storage_error(listener);
    }

    /// The event (title and restrictions), once joined.
    #[wasm_bindgen(getter, unchecked_return_type = "EventInfo | null")]
    pub fn event(&self) -> JsValue {
        self.client.event().map(|e| event_to_js(&e)).unwrap_or(JsValue::NULL)
    }

    /// Whether every attempt this page drives is finished or waits for the
    /// guest, with nothing in flight.
    #[wasm_bindgen(getter)]
    pub fn idle(&self) -> bool {
        self.client.is_idle()
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
