//! A write the browser refuses fails promptly, writes nothing, and leaves
//! the store usable for the attempt records.
//!
//! The refusal used here is WebKit's in a private profile (the stock
//! WebKitWebDriver profile): a Blob value fails its request with
//! `UnknownError: Error preparing Blob/File data to be stored in object
//! store`. If the page cancels that request's error event (preventDefault),
//! WebKit never settles the transaction, and every later transaction on the
//! store waits forever: the attempt records could never be written again.
//! Elsewhere the same write succeeds, and the test checks the store after it.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use upload_once::core::attempt::{AttemptRecord, FileInfo};
use upload_once::env::timeout;
use upload_once::store::{Durability, IndexedDbStore};
use uuid::Uuid;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn a_refused_write_fails_at_once_and_the_records_can_still_be_written() {
    let kept_here = blobs_can_be_kept().await;
    let store = IndexedDbStore::open(&unique("db")).await.map_err(JsValue::from).unwrap();
    let blob: JsValue = file("photo.png", "image/png", 1_000, 1.0).into();

    let refused = timeout(10_000.0, store.put_meta("a-blob", &blob)).await.expect("the write settles");
    assert_eq!(refused.is_ok(), kept_here, "{refused:?}");
    if !kept_here {
        assert_eq!(store.get_meta("a-blob").await.map_err(JsValue::from).unwrap(), None, "nothing was written");
    }

    let record = AttemptRecord::new(
        Uuid::from_u128(7),
        "wedding",
        FileInfo { name: "cake.jpg".into(), size: 1, content_type: "image/jpeg".into(), last_modified: 0 },
        5,
    );
    timeout(10_000.0, store.put_attempts(&[&record], Durability::Strict))
        .await
        .expect("a record write after the refusal settles")
        .map_err(JsValue::from)
        .unwrap();
    timeout(10_000.0, store.put_meta("session", &JsValue::from_str("token")))
        .await
        .expect("a write to the same store after the refusal settles")
        .map_err(JsValue::from)
        .unwrap();
    assert_eq!(store.load_attempt(&record.id).await.map_err(JsValue::from).unwrap(), Some(record));
    assert_eq!(
        store.get_meta("session").await.map_err(JsValue::from).unwrap().and_then(|v| v.as_string()).as_deref(),
        Some("token")
    );
    store.close_connection();
}
