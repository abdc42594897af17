//! `Uploader.busy` and `onBusyChange`: busy from the pick until every file
//! is confirmed (through a retry's wait), then not, each change said once.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use js_sys::Function;
use upload_once::core::attempt::Confirmation;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn busy_while_files_go_up_and_retry_then_not() {
    let setup = Setup::new(1_000_000, "none").await;
    let client = setup.open().await;
    // Each change, with how many files were confirmed when it was said.
    let said = Rc::new(RefCell::new(Vec::<(bool, usize)>::new()));
    let (sink, reader) = (said.clone(), client.clone());
    let listener = Closure::<dyn FnMut(JsValue)>::new(move |v: JsValue| {
        let confirmed = reader.records().iter().filter(|r| r.confirmation == Confirmation::Confirmed).count();
        sink.borrow_mut().push((v.as_bool().unwrap(), confirmed));
    });
    client.subscribe(upload_once::client::ListenerKind::Busy, listener.as_ref().unchecked_ref::<Function>().clone());
    assert!(!client.is_busy());

    // The first confirm's answer is lost: that file waits for its retry.
    setup.faults.drop_confirm_answers.set(1);
    client
        .add(vec![file("a.png", "image/png", 2_000, 1.0), file("b.png", "image/png", 3_000, 1.0)])
        .await
        .map_err(JsValue::from)
        .unwrap();
    assert!(client.is_busy());
    settle(&client).await;
    assert_eq!(setup.faults.drop_confirm_answers.get(), 0, "an answer was lost");
    assert!(setup.faults.confirms.get() >= 3, "and its confirm sent again");
    assert!(!client.is_busy());
    // Busy once, through the retry's wait; not busy only once both were
    // confirmed.
    assert_eq!(*said.borrow(), vec![(true, 0), (false, 2)]);
    assert_eq!(host_media(&setup.event).await.len(), 2);
    client.close();
}
