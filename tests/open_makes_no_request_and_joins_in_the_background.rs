//! `Uploader.open` is ready without a round trip: with a stored session it
//! sends nothing; on a first visit it joins the event in the background and
//! resolves without waiting for the answer. Files picked meanwhile wait for
//! the join, then go up. A guest code the server refuses is reported
//! (`onSessionChange`, `sessionError`) and files picked then are refused
//! with that code, recorded nowhere.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use upload_once::Added;
use upload_once::client::ListenerKind;
use upload_once::core::attempt::Confirmation;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn a_first_visit_is_usable_before_the_join_answers() {
    let setup = Setup::new(1_000_000, "none").await;
    let (gate, held) = futures_channel::oneshot::channel();
    *setup.faults.hold_joins.borrow_mut() = Some(held);
    let client = setup.open().await;
    // Resolved while the join is held at the server's door.
    wait_for("the join to start", 10_000.0, || setup.faults.joins.get() == 1).await;
    assert!(!client.has_session(), "open did not wait for the join");

    // A file picked now waits for the join, then goes up.
    let adding = {
        let client = client.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            client
                .add(vec![file("early.png", "image/png", 5_000, 1.0)])
                .await
                .map(|_| wasm_bindgen::JsValue::NULL)
                .map_err(Into::into)
        })
    };
    assert_eq!(setup.faults.authorizes.get(), 0);
    gate.send(()).unwrap();
    wasm_bindgen_futures::JsFuture::from(adding).await.unwrap();
    settle(&client).await;
    assert_eq!(only_record(&client).confirmation, Confirmation::Confirmed);
    assert_eq!((setup.faults.joins.get(), setup.faults.authorizes.get()), (1, 1));
    client.close();

    // The next visit has the session stored: open sends nothing.
    let again = Rc::new(Faults::default());
    let client = open(setup.opts.clone(), &again).await;
    assert!(client.has_session(), "the stored session, read at open");
    client.restore().await.unwrap();
    settle(&client).await;
    assert_eq!(again.joins.get(), 0, "no join on a later visit");
    client.close();
}

#[wasm_bindgen_test]
async fn a_refused_guest_code_is_reported_and_files_are_refused_with_it() {
    let mut setup = Setup::new(1_000_000, "none").await;
    setup.opts.guest_code = "not-the-code".into();
    let client = setup.open().await;
    let heard: Rc<RefCell<Vec<String>>> = Rc::default();
    let sink = heard.clone();
    let listener = Closure::<dyn FnMut(wasm_bindgen::JsValue, wasm_bindgen::JsValue)>::new(
        move |_event, error: wasm_bindgen::JsValue| {
            let code =
                js_sys::Reflect::get(&error, &"code".into()).ok().and_then(|c| c.as_string()).unwrap_or_default();
            sink.borrow_mut().push(code);
        },
    );
    client.subscribe(ListenerKind::Session, listener.as_ref().unchecked_ref::<js_sys::Function>().clone());
    wait_for("the refusal", 10_000.0, || client.session_error().is_some()).await;
    assert_eq!(client.session_error().unwrap().code, "wrong_guest_code");
    assert_eq!(*heard.borrow(), vec!["wrong_guest_code".to_owned()], "the listener heard it once");

    let added = client.add(vec![file("late.png", "image/png", 5_000, 2.0)]).await.unwrap();
    assert!(matches!(&added[0], Added::Refused { error, .. } if error.code.as_str() == "wrong_guest_code"));
    assert!(client.records().is_empty(), "nothing recorded");
    assert_eq!(setup.faults.authorizes.get(), 0, "nothing sent");
    client.close();
}
