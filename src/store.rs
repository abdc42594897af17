//! `IndexedDbStore`: attempt records, the guest session and the files'
//! bytes, in IndexedDB.
//!
//! - The schema (object stores) is created and upgraded through rexie's
//!   builder, versioned by [`SCHEMA_VERSION`]; each record also carries its
//!   own format version (`v`) so old records are upgraded as they are read.
//!   Everything after that goes through one plain connection that closes
//!   itself when another tab upgrades the schema.
//! - A new attempt's record (before its first request) and the guest
//!   session are written with `durability: "strict"` and awaited until
//!   `complete`; later state changes use relaxed durability (enough against
//!   a killed tab; after a power cut a restore asks the server anyway).
//! - Blobs live in their own object store and their own transactions, with
//!   a time limit: a browser that refuses to store a Blob (private modes; a
//!   WebKit transaction that never settles) can never block or abort the
//!   attempt records.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Array, Promise};
use rexie::{ObjectStore, Rexie};
use upload_once_core::attempt::{AttemptRecord, RECORD_VERSION};
use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, DomException, IdbDatabase};

use crate::env::timeout;
use crate::error::{Error, Result};
use crate::serde_js::{from_js, to_js};

/// The object-store layout version.
pub const SCHEMA_VERSION: u32 = 1;
/// Attempt records, keyed by attempt id.
pub const ATTEMPTS: &str = "attempts";
/// File bytes, keyed by the attempt's blob key.
pub const BLOBS: &str = "blobs";
/// Small values: the guest session per (server, event).
pub const META: &str = "meta";
/// How long a blob operation may take before the blob store is treated as
/// broken for this page.
const BLOB_TIMEOUT_MS: f64 = 5_000.0;

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = writeStore)]
    fn write_store(
        db: &IdbDatabase,
        store: &str,
        durability: &str,
        values: &Array,
        keys: &JsValue,
        deletes: &Array,
    ) -> Promise;
    #[wasm_bindgen(js_name = readStore)]
    fn read_store(db: &IdbDatabase, store: &str, op: &str, key: &JsValue) -> Promise;
    #[wasm_bindgen(js_name = requestDone)]
    fn request_done(req: &web_sys::IdbRequest) -> Promise;
    #[wasm_bindgen(js_name = putSessionUnlessPresent)]
    fn put_session_unless_present(
        db: &IdbDatabase,
        store: &str,
        key: &str,
        value: &JsValue,
        stale_token: Option<String>,
    ) -> Promise;
}

pub use upload_once_core::page::Durability;

/// Maps a DOMException (or anything thrown) to a client error.
pub fn storage_error(value: &JsValue) -> Error {
    let (name, message) = match value.dyn_ref::<DomException>() {
        Some(e) => (e.name(), e.message()),
        None => match value.dyn_ref::<js_sys::Error>() {
            Some(e) => (String::from(e.name()), String::from(e.message())),
            None => (String::new(), value.as_string().unwrap_or_default()),
        },
    };
    // Chromium, Firefox and WebKit all name it QuotaExceededError.
    if name == "QuotaExceededError" {
        Error::QuotaExceeded(message)
    } else {
        Error::StorageUnavailable(if name.is_empty() { message } else { format!("{name}: {message}") })
    }
}

fn rexie_error(e: rexie::Error) -> Error {
    // rexie only creates or upgrades the schema.
    Error::StorageUnavailable(e.to_string())
}

/// An attempt record as IndexedDB keeps it: its serde form (field names
/// are the stored format, version [`RECORD_VERSION`]).
pub fn record_to_js(record: &AttemptRecord) -> Result<JsValue> {
    to_js(record).map_err(|e| Error::StorageUnavailable(format!("the record cannot be stored: {e}")))
}

/// Reads a stored attempt record. Records written by a newer version, and
/// values that are not records, are left alone (`None`).
pub fn record_from_js(value: &JsValue) -> Option<AttemptRecord> {
    let version = js_sys::Reflect::get(value, &"v".into()).ok()?.as_f64()?;
    if version > f64::from(RECORD_VERSION) {
        return None;
    }
    // Version 1 is the current format; later versions add upgrade steps here.
    from_js(value.clone()).ok()
}

/// Attempt ids as IndexedDB keys (their hyphenated text).
fn id_keys<'a>(ids: impl IntoIterator<Item = &'a Uuid>) -> Array {
    ids.into_iter().map(|id| JsValue::from_str(&id.to_string())).collect()
}

/// The attempts, session and blobs of this origin.
pub struct IndexedDbStore {
    db: IdbDatabase,
    /// Another page opened a newer version of the database (or deleted it),
    /// and this connection was closed so as not to block it.
    upgraded_elsewhere: Rc<Cell<bool>>,
    blobs_broken: Cell<bool>,
    blobs_proven: Cell<bool>,
}

impl IndexedDbStore {
    /// Opens (creating or upgrading) the database `name`.
    pub async fn open(name: &str) -> Result<IndexedDbStore> {
        if crate::env::lookup("indexedDB").is_undefined() {
            return Err(Error::StorageUnavailable("this browser has no IndexedDB".into()));
        }
        // The schema, created or upgraded by rexie's builder; that
        // connection has done its job once the upgrade is through.
        Rexie::builder(name)
            .version(SCHEMA_VERSION)
            .add_object_store(ObjectStore::new(ATTEMPTS).key_path("id"))
            .add_object_store(ObjectStore::new(BLOBS))
            .add_object_store(ObjectStore::new(META))
            .build()
            .await
            .map_err(rexie_error)?
            .close();
        // The working connection, opened without a version (no upgrade), so
        // it can ask for transaction durability, which rexie does not expose.
        let factory = crate::env::lookup("indexedDB").unchecked_into::<web_sys::IdbFactory>();
        let request = factory.open(name).map_err(|e| storage_error(&e))?;
        let db = JsFuture::from(request_done(&request)).await.map_err(|e| storage_error(&e))?;
        let db: IdbDatabase = db.unchecked_into();
        // Another tab upgrading the schema must not be blocked by us.
        let upgraded_elsewhere = Rc::new(Cell::new(false));
        let close = Closure::<dyn FnMut()>::new({
            let (db, flag) = (db.clone(), upgraded_elsewhere.clone());
            move || {
                flag.set(true);
                db.close();
            }
        });
        db.set_onversionchange(Some(close.as_ref().unchecked_ref()));
        close.forget();
        Ok(IndexedDbStore { db, upgraded_elsewhere, blobs_broken: Cell::new(false), blobs_proven: Cell::new(false) })
    }

    /// Why this store can no longer be used, once another page upgraded or
    /// deleted the database (see [`IndexedDbStore::usable`]).
    pub fn lost(&self) -> Option<Error> {
        self.usable().err()
    }

    /// Fails once another page has upgraded or deleted the database: this
    /// connection is closed, and only a reload can go on.
    fn usable(&self) -> Result<()> {
        if self.upgraded_elsewhere.get() {
            return Err(Error::StorageUnavailable(
                "another page upgraded or deleted this site's upload database; reload this page".into(),
            ));
        }
        Ok(())
    }

    /// Puts `values` into `store` (under `keys` when it is an array, else at
    /// the store's key path) and deletes `deletes`, in one readwrite
    /// transaction, and waits for it to commit (`strict`: flushed to disk).
    /// Nothing is written if anything fails.
    async fn write(
        &self,
        store: &str,
        durability: Durability,
        values: &Array,
        keys: &JsValue,
        deletes: &Array,
    ) -> Result<()> {
        let mode = match durability {
            Durability::Strict => "strict",
            Durability::Relaxed => "relaxed",
        };
        self.usable()?;
        JsFuture::from(write_store(&self.db, store, mode, values, keys, deletes))
            .await
            .map_err(|e| storage_error(&e))?;
        Ok(())
    }

    /// Runs one read request (`get` of `key`, `getAll`, `getAllKeys`) on
    /// `store` and returns its result.
    async fn read(&self, store: &str, op: &str, key: &JsValue) -> Result<JsValue> {
        self.usable()?;
        JsFuture::from(read_store(&self.db, store, op, key)).await.map_err(|e| storage_error(&e))
    }

    /// Stores attempt records, all or none.
    pub async fn put_attempts(&self, records: &[&AttemptRecord], durability: Durability) -> Result<()> {
        self.write_attempts(records, &[], durability).await
    }

    /// Stores attempt records and deletes others, in one transaction: all
    /// or none.
    pub async fn write_attempts(&self, put: &[&AttemptRecord], delete: &[Uuid], durability: Durability) -> Result<()> {
        let values: Array = put.iter().map(|r| record_to_js(r)).collect::<Result<_>>()?;
        self.write(ATTEMPTS, durability, &values, &JsValue::UNDEFINED, &id_keys(delete)).await
    }

    /// Every attempt record of `event`, oldest first.
    pub async fn load_attempts(&self, event: &str) -> Result<Vec<AttemptRecord>> {
        let values = self.read(ATTEMPTS, "getAll", &JsValue::UNDEFINED).await?;
        let mut records: Vec<AttemptRecord> = js_sys::Array::from(&values)
            .iter()
            .filter_map(|v| record_from_js(&v))
            .filter(|r| r.event == event)
            .collect();
        records.sort_unstable_by_key(|r| (r.created_at, r.id));
        Ok(records)
    }

    /// One attempt record.
    pub async fn load_attempt(&self, id: &Uuid) -> Result<Option<AttemptRecord>> {
        let value = self.read(ATTEMPTS, "get", &JsValue::from_str(&id.to_string())).await?;
        Ok(record_from_js(&value))
    }

    /// A small stored value.
    pub async fn get_meta(&self, key: &str) -> Result<Option<JsValue>> {
        let value = self.read(META, "get", &JsValue::from_str(key)).await?;
        Ok(Some(value).filter(|v| !v.is_undefined() && !v.is_null()))
    }

    /// Stores a small value durably.
    pub async fn put_meta(&self, key: &str, value: &JsValue) -> Result<()> {
        let keys: JsValue = Array::of1(&JsValue::from_str(key)).into();
        self.write(META, Durability::Strict, &Array::of1(value), &keys, &Array::new()).await
    }

    /// Stores a guest session durably unless another page stored a live one
    /// first (one transaction); returns the session to use. A stored session
    /// with `stale_token` is replaced.
    pub async fn put_session(&self, key: &str, value: &JsValue, stale_token: Option<String>) -> Result<JsValue> {
        self.usable()?;
        JsFuture::from(put_session_unless_present(&self.db, META, key, value, stale_token))
            .await
            .map_err(|e| storage_error(&e))
    }

    /// Whether blob storage has failed in this page (then it is not tried
    /// again: a stuck transaction would make every later one hang too).
    pub fn blobs_broken(&self) -> bool {
        self.blobs_broken.get()
    }

    async fn blob_op<T>(&self, op: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        if self.blobs_broken.get() {
            return Err(Error::StorageUnavailable("blob storage failed earlier in this page".into()));
        }
        match timeout(BLOB_TIMEOUT_MS, op).await {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => {
                self.blobs_broken.set(true);
                Err(e)
            }
            None => {
                self.blobs_broken.set(true);
                Err(Error::StorageUnavailable("a blob transaction did not finish".into()))
            }
        }
    }

    /// Whether this page has stored a blob already (then several may share
    /// a transaction).
    pub fn blobs_proven(&self) -> bool {
        self.blobs_proven.get()
    }

    /// Keeps files' bytes, in a transaction of their own (apart from the
    /// attempt records); may fail (private modes), which only means the
    /// files are not kept across a reload. Until one blob has been stored in
    /// this page, pass one at a time: WebKit refusing a Blob aborts a
    /// transaction holding only that request, but can leave one with earlier
    /// requests pending forever.
    pub async fn put_blobs(&self, items: &[(Uuid, Blob)]) -> Result<()> {
        let values: Array = items.iter().map(|(_, blob)| JsValue::from(blob)).collect();
        let keys: JsValue = id_keys(items.iter().map(|(key, _)| key)).into();
        let result = self.blob_op(self.write(BLOBS, Durability::Relaxed, &values, &keys, &Array::new())).await;
        if result.is_ok() {
            self.blobs_proven.set(true);
        }
        result
    }

    /// A kept file.
    pub async fn get_blob(&self, key: &Uuid) -> Result<Option<Blob>> {
        let key = JsValue::from_str(&key.to_string());
        let value = self.blob_op(self.read(BLOBS, "get", &key)).await?;
        Ok(value.dyn_into::<Blob>().ok())
    }

    /// The keys of every kept file.
    pub async fn blob_keys(&self) -> Result<Vec<Uuid>> {
        let keys = self.blob_op(self.read(BLOBS, "getAllKeys", &JsValue::UNDEFINED)).await?;
        Ok(js_sys::Array::from(&keys)
            .iter()
            .filter_map(|k| k.as_string())
            .filter_map(|k| Uuid::try_parse(&k).ok())
            .collect())
    }

    /// Deletes kept files.
    pub async fn delete_blobs(&self, keys: &[Uuid]) -> Result<()> {
        self.blob_op(self.write(BLOBS, Durability::Relaxed, &Array::new(), &JsValue::UNDEFINED, &id_keys(keys))).await
    }

    /// Closes the connection (the uploader was closed).
    pub fn close_connection(&self) {
        self.db.close();
    }
}

/// Deletes a whole database (tests).
pub async fn delete_database(name: &str) -> Result<()> {
    Rexie::delete(name).await.map_err(rexie_error)
}
