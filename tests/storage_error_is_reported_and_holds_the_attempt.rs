//! When attempt records can no longer be saved, the app is told (never only
//! a console line), and the attempt waits instead of acting on a state that
//! is not on disk.
//!
//! The failure used here is a real one: another page of the site opens a
//! newer version of the database (a new deploy), so this page's connection
//! is closed to let that upgrade through, and nothing can be saved here
//! until a reload.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use js_sys::{Function, Reflect};
use upload_once::store::delete_database;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn records_that_cannot_be_saved_are_reported_and_hold_their_attempt() {
    let setup = Setup::new(1_000_000, "none").await;
    let client = setup.open().await;
    let reported = Rc::new(RefCell::new(Vec::<JsValue>::new()));
    let sink = reported.clone();
    let listener = Closure::<dyn FnMut(JsValue)>::new(move |v: JsValue| sink.borrow_mut().push(v));
    client.subscribe(upload_once::client::ListenerKind::Storage, listener.as_ref().unchecked_ref::<Function>().clone());
    assert!(client.storage_error().is_none());

    // Offline: every authorize fails, and each failure changes the record
    // (retry count, next retry time), which must be saved.
    setup.faults.offline.set(true);
    client.add(vec![file("cake.jpg", "image/jpeg", 20_000, 1.0)]).await.map_err(JsValue::from).expect("recorded");
    wait_for("a failed authorize", 5_000.0, || setup.faults.authorizes.get() >= 1).await;

    upgrade_from_another_page(&setup.db).await;
    wait_for("the storage error to be reported", 5_000.0, || !reported.borrow().is_empty()).await;
    let error = client.storage_error().expect("the error lasts while saving fails");
    assert_eq!(error.code, "storage_unavailable");
    assert!(error.message.contains("reload this page"), "{}", error.message);
    let first = reported.borrow()[0].clone();
    assert_eq!(Reflect::get(&first, &"code".into()).unwrap().as_string().as_deref(), Some("storage_unavailable"));
    assert!(Reflect::get(&first, &"message".into()).unwrap().as_string().unwrap().contains("reload this page"));

    // Back online, the server would authorize, but that state cannot be
    // saved: the bytes must not leave on its strength.
    // The page keeps trying the write; two more failed tries after coming
    // back online are two moments it acted while online, and by then the
    // attempt's own retry was long due (its backoff is capped at 400 ms).
    // The loss may be reported before any write failed (the page sees its
    // connection closed first), so the first failed write is waited for.
    setup.faults.offline.set(false);
    wait_for("a failed write, counted", 5_000.0, || client.failed_writes() >= 1).await;
    let tries = client.failed_writes();
    wait_for("two more tries of the write", 10_000.0, || client.failed_writes() >= tries + 2).await;
    let due = client.records().iter().filter_map(|r| r.next_retry_at).max();
    assert!(due.is_none_or(|t| (t as f64) < js_sys::Date::now()), "the attempt's retry was due meanwhile");
    assert_eq!(setup.faults.puts.get(), 0, "no PUT for an attempt whose record is not saved");
    assert_eq!(reported.borrow().len(), 1, "reported once, not once per retry");
    assert!(client.storage_error().is_some());

    client.close();
    delete_database(&setup.db).await.map_err(JsValue::from).unwrap();
}
