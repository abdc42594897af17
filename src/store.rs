//! `IndexedDbStore`: attempt records, the guest session and the files'
//! bytes, in IndexedDB.
//!
//! - The schema (object stores) is opened and upgraded through rexie,
//!   versioned by [`SCHEMA_VERSION`]; each record also carries its own format
//!   version (`v`) so old records are upgraded as they are read.
//! - Writes that the protocol depends on (a new attempt before its first
//!   request, every state change, the session) go through a transaction with
//!   `durability: "strict"` and are awaited until `complete`.
//! - Blobs live in their own object store and their own transactions, with
//!   a time limit: a browser that refuses to store a Blob (private modes; a
//!   WebKit transaction that never settles) can never block or abort the
//!   attempt records.

use std::cell::Cell;

use js_sys::Promise;
use rexie::{ObjectStore, Rexie, TransactionMode};
use upload_once_core::attempt::AttemptRecord;
use uuid::Uuid;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, DomException, IdbDatabase, IdbObjectStore, IdbTransaction};

use crate::env::timeout;
use crate::error::{Error, Result};
use crate::jsio::{record_from_js, record_to_js};

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
    #[wasm_bindgen(js_name = durableTransaction, catch)]
    fn durable_transaction(db: &IdbDatabase, names: &JsValue, mode: &str, durability: &str) -> std::result::Result<IdbTransaction, JsValue>;
    #[wasm_bindgen(js_name = transactionDone)]
    fn transaction_done(tx: &IdbTransaction) -> Promise;
    #[wasm_bindgen(js_name = requestDone)]
    fn request_done(req: &web_sys::IdbRequest) -> Promise;
}

/// How far a write must have gone before it counts as done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Flushed to disk: a new attempt's id must survive a power cut before
    /// its first request leaves.
    Strict,
    /// Handed to the browser: enough for later transitions, which a restore
    /// re-checks with the server anyway.
    Relaxed,
}

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
    // Writes that can hit the quota go through the strict path; rexie only
    // reads, opens and keeps blobs.
    Error::StorageUnavailable(e.to_string())
}

/// The attempts, session and blobs of this origin.
pub struct IndexedDbStore {
    db: Rexie,
    raw: IdbDatabase,
    blobs_broken: Cell<bool>,
}

impl IndexedDbStore {
    /// Opens (creating or upgrading) the database `name`.
    pub async fn open(name: &str) -> Result<IndexedDbStore> {
        if crate::env::lookup("indexedDB").is_undefined() {
            return Err(Error::StorageUnavailable("this browser has no IndexedDB".into()));
        }
        let db = Rexie::builder(name)
            .version(SCHEMA_VERSION)
            .add_object_store(ObjectStore::new(ATTEMPTS).key_path("id"))
            .add_object_store(ObjectStore::new(BLOBS))
            .add_object_store(ObjectStore::new(META))
            .build()
            .await
            .map_err(rexie_error)?;
        // A second connection for strict-durability transactions, which
        // rexie does not expose. Opened without a version: no upgrade.
        let factory = crate::env::lookup("indexedDB").unchecked_into::<web_sys::IdbFactory>();
        let request = factory.open(name).map_err(|e| storage_error(&e))?;
        let raw = JsFuture::from(request_done(&request)).await.map_err(|e| storage_error(&e))?;
        let raw: IdbDatabase = raw.unchecked_into();
        // Another tab upgrading the schema must not be blocked by us.
        let close = Closure::<dyn FnMut()>::new({
            let raw = raw.clone();
            move || raw.close()
        });
        raw.set_onversionchange(Some(close.as_ref().unchecked_ref()));
        close.forget();
        Ok(IndexedDbStore { db, raw, blobs_broken: Cell::new(false) })
    }

    /// Runs `f` on `store` in a readwrite transaction and waits for it to
    /// commit (`strict`: flushed to disk). Nothing is written if anything fails.
    async fn write(
        &self,
        store: &str,
        durability: Durability,
        f: impl FnOnce(&IdbObjectStore) -> std::result::Result<(), JsValue>,
    ) -> Result<()> {
        let mode = match durability {
            Durability::Strict => "strict",
            Durability::Relaxed => "relaxed",
        };
        let tx = durable_transaction(&self.raw, &JsValue::from_str(store), "readwrite", mode).map_err(|e| storage_error(&e))?;
        let done = transaction_done(&tx);
        let os = tx.object_store(store).map_err(|e| storage_error(&e))?;
        if let Err(e) = f(&os) {
            let _ = tx.abort();
            let _ = JsFuture::from(done).await;
            return Err(storage_error(&e));
        }
        JsFuture::from(done).await.map_err(|e| storage_error(&e))?;
        Ok(())
    }

    /// Stores attempt records, all or none.
    pub async fn put_attempts(&self, records: &[&AttemptRecord], durability: Durability) -> Result<()> {
        let values: Vec<JsValue> = records.iter().map(|r| record_to_js(r)).collect();
        self.write(ATTEMPTS, durability, |os| {
            for v in &values {
                os.put(v)?;
            }
            Ok(())
        })
        .await
    }

    /// Deletes attempt records durably.
    pub async fn delete_attempts(&self, ids: &[Uuid]) -> Result<()> {
        self.write(ATTEMPTS, Durability::Strict, |os| {
            for id in ids {
                os.delete(&JsValue::from_str(&id.to_string()))?;
            }
            Ok(())
        })
        .await
    }

    /// Every attempt record of `event`, oldest first.
    pub async fn load_attempts(&self, event: &str) -> Result<Vec<AttemptRecord>> {
        let tx = self.db.transaction(&[ATTEMPTS], TransactionMode::ReadOnly).map_err(rexie_error)?;
        let store = tx.store(ATTEMPTS).map_err(rexie_error)?;
        let values = store.get_all(None, None).await.map_err(rexie_error)?;
        let _ = tx.done().await;
        let mut records: Vec<AttemptRecord> =
            values.iter().filter_map(record_from_js).filter(|r| r.event == event).collect();
        records.sort_unstable_by_key(|r| (r.created_at, r.id));
        Ok(records)
    }

    /// One attempt record.
    pub async fn load_attempt(&self, id: &Uuid) -> Result<Option<AttemptRecord>> {
        let tx = self.db.transaction(&[ATTEMPTS], TransactionMode::ReadOnly).map_err(rexie_error)?;
        let store = tx.store(ATTEMPTS).map_err(rexie_error)?;
        let value = store.get(JsValue::from_str(&id.to_string())).await.map_err(rexie_error)?;
        let _ = tx.done().await;
        Ok(value.as_ref().and_then(record_from_js))
    }

    /// A small stored value.
    pub async fn get_meta(&self, key: &str) -> Result<Option<JsValue>> {
        let tx = self.db.transaction(&[META], TransactionMode::ReadOnly).map_err(rexie_error)?;
        let store = tx.store(META).map_err(rexie_error)?;
        let value = store.get(JsValue::from_str(key)).await.map_err(rexie_error)?;
        let _ = tx.done().await;
        Ok(value)
    }

    /// Stores a small value durably.
    pub async fn put_meta(&self, key: &str, value: &JsValue) -> Result<()> {
        self.write(META, Durability::Strict, |os| os.put_with_key(value, &JsValue::from_str(key)).map(|_| ())).await
    }

    /// Whether blob storage has failed in this page (then it is not tried
    /// again: a stuck transaction would make every later one hang too).
    pub fn blobs_broken(&self) -> bool {
        self.blobs_broken.get()
    }

    async fn blob_op<T>(&self, op: impl std::future::Future<Output = std::result::Result<T, rexie::Error>>) -> Result<T> {
        if self.blobs_broken.get() {
            return Err(Error::StorageUnavailable("blob storage failed earlier in this page".into()));
        }
        match timeout(BLOB_TIMEOUT_MS, op).await {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => {
                self.blobs_broken.set(true);
                Err(rexie_error(e))
            }
            None => {
                self.blobs_broken.set(true);
                Err(Error::StorageUnavailable("a blob transaction did not finish".into()))
            }
        }
    }

    /// Keeps a file's bytes. In its own transaction; may fail (private
    /// modes), which only means the file is not kept across a reload.
    pub async fn put_blob(&self, key: &Uuid, blob: &Blob) -> Result<()> {
        let key = JsValue::from_str(&key.to_string());
        self.blob_op(async {
            let tx = self.db.transaction(&[BLOBS], TransactionMode::ReadWrite)?;
            tx.store(BLOBS)?.put(blob, Some(&key)).await?;
            tx.done().await?;
            Ok(())
        })
        .await
    }

    /// A kept file.
    pub async fn get_blob(&self, key: &Uuid) -> Result<Option<Blob>> {
        let key = JsValue::from_str(&key.to_string());
        let value = self
            .blob_op(async {
                let tx = self.db.transaction(&[BLOBS], TransactionMode::ReadOnly)?;
                let value = tx.store(BLOBS)?.get(key).await?;
                let _ = tx.done().await;
                Ok(value)
            })
            .await?;
        Ok(value.and_then(|v| v.dyn_into::<Blob>().ok()))
    }

    /// The keys of every kept file.
    pub async fn blob_keys(&self) -> Result<Vec<Uuid>> {
        let keys = self
            .blob_op(async {
                let tx = self.db.transaction(&[BLOBS], TransactionMode::ReadOnly)?;
                let keys = tx.store(BLOBS)?.get_all_keys(None, None).await?;
                let _ = tx.done().await;
                Ok(keys)
            })
            .await?;
        Ok(keys.iter().filter_map(|k| k.as_string()).filter_map(|k| Uuid::parse_str(&k).ok()).collect())
    }

    /// Deletes kept files.
    pub async fn delete_blobs(&self, keys: &[Uuid]) -> Result<()> {
        let keys: Vec<JsValue> = keys.iter().map(|k| JsValue::from_str(&k.to_string())).collect();
        self.blob_op(async {
            let tx = self.db.transaction(&[BLOBS], TransactionMode::ReadWrite)?;
            let store = tx.store(BLOBS)?;
            for k in keys {
                store.delete(k).await?;
            }
            tx.done().await?;
            Ok(())
        })
        .await
    }

    /// Closes the strict-write connection (the rexie one closes when
    /// dropped with the store).
    pub fn close_connection(&self) {
        self.raw.close();
    }
}

/// Deletes a whole database (tests and `Uploader.reset`).
pub async fn delete_database(name: &str) -> Result<()> {
    Rexie::delete(name).await.map_err(rexie_error)
}
