//! The happy path: a picked file is recorded, uploaded with progress,
//! confirmed once, and shown with its three states apart.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::rc::Rc;

use common::*;
use upload_once::core::attempt::{Confirmation, ModerationView, Transfer};
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn a_file_is_uploaded_and_confirmed_exactly_once() {
    let setup = Setup::new(1_000_000, "required").await;
    *setup.faults.inspect_db.borrow_mut() = Some(setup.db.clone());
    let client = setup.open().await;

    let added = client.add(vec![file("cake.jpg", "image/jpeg", 20_000, 1_700_000_000_000.0)]).await.unwrap();
    assert!(matches!(added[0], upload_once::Added::New(_)));

    settle(&client).await;
    let stored = setup.faults.stored_at_authorize.borrow().clone();
    assert_eq!(stored.len(), 1, "one authorize");
    let before = stored[0].as_ref().expect("the attempt was in IndexedDB before its first request left");
    assert_eq!(before.transfer, Transfer::Queued, "recorded before anything was sent");
    let record = only_record(&client);
    assert_eq!(record.transfer, Transfer::Uploaded);
    assert_eq!(record.confirmation, Confirmation::Confirmed);
    assert_eq!(record.moderation, ModerationView::Pending, "saved is not approved");
    assert_eq!((setup.faults.authorizes.get(), setup.faults.puts.get(), setup.faults.confirms.get()), (1, 1, 1));
    assert!(client.has_session() && setup.faults.joins.get() == 1, "the event was joined once, in the background");

    let media = host_media(&setup.event).await;
    assert_eq!(media.len(), 1);
    assert_eq!(media[0]["attempt_id"], record.id.to_string());
    assert_eq!(media[0]["size"], 20_000);
    client.close();
}

#[wasm_bindgen_test]
async fn progress_reaches_the_app_through_on_change() {
    let client = Setup::new(10_000_000, "none").await.open().await;
    let seen = Rc::new(std::cell::RefCell::new(Vec::<(String, f64, String)>::new()));
    let sink = seen.clone();
    let listener =
        wasm_bindgen::closure::Closure::<dyn FnMut(wasm_bindgen::JsValue)>::new(move |v: wasm_bindgen::JsValue| {
            let get = |k: &str| js_sys::Reflect::get(&v, &k.into()).unwrap();
            sink.borrow_mut().push((
                get("transfer").as_string().unwrap(),
                get("bytesSent").as_f64().unwrap(),
                get("moderation").as_string().unwrap(),
            ));
        });
    client.subscribe(
        upload_once::client::ListenerKind::Change,
        listener.as_ref().unchecked_ref::<js_sys::Function>().clone(),
    );
    client.add(vec![file("clip.mp4", "video/mp4", 3_000_000, 1.0)]).await.unwrap();
    settle(&client).await;
    let seen = seen.borrow();
    assert!(seen.iter().any(|(t, _, _)| t == "uploading"), "uploading was reported");
    assert!(seen.iter().any(|(t, sent, _)| t == "uploading" && *sent > 0.0), "byte progress was reported");
    assert_eq!(seen.last().unwrap().0, "uploaded");
    assert_eq!(seen.last().unwrap().2, "approved", "an event without moderation approves at once");
    client.close();
}

use wasm_bindgen::JsCast;
