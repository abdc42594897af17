//! `maxFilesPerPick` and `maxPickBytes`, as an app passes them to
//! `Uploader.open`: a pick over either is refused whole, each file with the
//! stable code, before any record or request; a pick within them goes up.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::rc::Rc;

use common::*;
use upload_once::Added;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

fn codes(added: &[Added]) -> Vec<String> {
    added
        .iter()
        .map(|a| match a {
            Added::Refused { error, .. } => error.code.as_str().to_owned(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[wasm_bindgen_test]
async fn a_pick_over_the_caps_leaves_nothing_and_one_within_them_goes_up() {
    let event = create_event(1_000_000, "none").await;
    let faults = Rc::new(Faults::default());
    let db = unique("db");
    let js = js_sys::JSON::parse(&format!(
        r#"{{"apiBase":"{API}","event":"{}","guestCode":"{}","dbName":"{db}","maxFilesPerPick":2,"maxPickBytes":30000}}"#,
        event.event.slug, event.guest_code
    ))
    .unwrap();
    let options = upload_once::js::parse_options(js).map_err(JsValue::from).expect("the caps are options");
    let client = open(options, &faults).await;

    let three = vec![
        file("a.png", "image/png", 100, 1.0),
        file("b.png", "image/png", 100, 1.0),
        file("c.png", "image/png", 100, 1.0),
    ];
    let added = client.add(three).await.map_err(JsValue::from).unwrap();
    assert_eq!(codes(&added), vec!["too_many_files"; 3]);

    let heavy = vec![file("d.png", "image/png", 20_000, 1.0), file("e.png", "image/png", 20_000, 1.0)];
    let added = client.add(heavy).await.map_err(JsValue::from).unwrap();
    assert_eq!(codes(&added), vec!["pick_too_large"; 2]);
    settle(&client).await;
    assert!(client.records().is_empty(), "no record of a refused pick");
    assert_eq!(faults.authorizes.get(), 0, "nothing reached the network");

    let within = vec![file("f.png", "image/png", 14_000, 1.0), file("g.png", "image/png", 14_000, 1.0)];
    let added = client.add(within).await.map_err(JsValue::from).unwrap();
    assert!(added.iter().all(|a| matches!(a, Added::New(_))), "{added:?}");
    settle(&client).await;
    assert_eq!(host_media(&event).await.len(), 2);
    client.close();
}

#[wasm_bindgen_test]
async fn a_cap_of_zero_is_an_invalid_option() {
    let js = js_sys::JSON::parse(r#"{"apiBase":"","event":"e","guestCode":"c","maxFilesPerPick":0}"#).unwrap();
    let options = upload_once::js::parse_options(js).map_err(JsValue::from).expect("parsed");
    let faults = Rc::new(Faults::default());
    let refused = upload_once::Client::open(options.clone(), faulty(&options, &faults)).await;
    assert_eq!(refused.err().map(|e| e.code()).as_deref(), Some("invalid_options"));
}
