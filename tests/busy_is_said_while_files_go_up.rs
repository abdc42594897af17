//! `Uploader.busy` and `onBusyChange`: busy from the pick until every file
//! is confirmed (through a retry's wait), then not, each change said once.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use js_sys::Function;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn busy_while_files_go_up_and_retry_then_not() {
    let event = create_event(1_000_000, "none").await;
    let faults = Rc::new(Faults::default());
    let client = open(options(&event, &unique("db")), &faults).await;
    let said = Rc::new(RefCell::new(Vec::<bool>::new()));
    let sink = said.clone();
    let listener = Closure::<dyn FnMut(JsValue)>::new(move |v: JsValue| sink.borrow_mut().push(v.as_bool().unwrap()));
    client.subscribe(upload_once::client::ListenerKind::Busy, listener.as_ref().unchecked_ref::<Function>().clone());
    assert!(!client.is_busy());

    // The first confirm's answer is lost: the file waits for its retry,
    // busy all the while.
    faults.drop_confirm_answers.set(1);
    client
        .add(vec![file("a.png", "image/png", 2_000, 1.0), file("b.png", "image/png", 3_000, 1.0)])
        .await
        .map_err(JsValue::from)
        .unwrap();
    assert!(client.is_busy());
    wait_for("the lost confirm answer", 10_000.0, || faults.drop_confirm_answers.get() == 0).await;
    assert!(client.is_busy(), "a retry waiting for its time is still busy");
    settle(&client).await;
    assert!(!client.is_busy());
    assert_eq!(*said.borrow(), vec![true, false], "said once each way");
    assert_eq!(host_media(&event).await.len(), 2);
    client.close();
}
