//! An add or a forget waits on a write of its own, which the page model
//! asks for like every other write. When the browser refuses it, the call
//! fails with the store's code and words, and nothing changed: an add leaves
//! no attempt behind and sends nothing; a forgotten attempt stays.
//!
//! The refusal is a real one: another page of the site opens a newer
//! version of the database, so this page's connection is closed and
//! nothing can be saved here until a reload.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use upload_once::store::delete_database;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn a_refused_write_fails_the_add_or_the_forget_and_changes_nothing() {
    let setup = Setup::new(1_000_000, "none").await;
    let client = setup.open().await;
    // Offline: the first attempt is recorded and waits, unsent.
    setup.faults.offline.set(true);
    client.add(vec![file("cake.jpg", "image/jpeg", 20_000, 1.0)]).await.map_err(JsValue::from).expect("recorded");
    let kept = only_record(&client);

    upgrade_from_another_page(&setup.db).await;
    setup.faults.offline.set(false);
    let refused = client.add(vec![file("toast.jpg", "image/jpeg", 30_000, 2.0)]).await.expect_err("refused");
    assert_eq!(refused.code(), "storage_unavailable", "{refused}");
    assert!(refused.message().contains("reload this page"), "{refused}");
    assert_eq!(client.records().len(), 1, "the refused add left no attempt");
    assert!(client.views().iter().all(|v| v.id == kept.id), "nor a view of one");

    let refused = client.forget(&kept.id).await.expect_err("refused");
    assert_eq!(refused.code(), "storage_unavailable", "{refused}");
    assert!(client.record(&kept.id).is_some(), "the attempt whose record could not be deleted stays");
    assert_eq!(setup.faults.puts.get(), 0, "no byte left for an attempt that was not saved");

    client.close();
    delete_database(&setup.db).await.map_err(JsValue::from).unwrap();
}
