//! A large file goes up in parts. A page closed mid-transfer (a reload, a
//! crash) goes on from the first part the server does not have, with the
//! bytes it kept; a file too big to keep asks to be picked again and then
//! goes on the same way; another file with the same name, size and time is
//! a new upload, never spliced into the first. Progress never falls back by
//! more than the parts on the wire.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use upload_once::Added;
use upload_once::client::ListenerKind;
use upload_once::core::attempt::{Confirmation, Transfer};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen_test::*;

const MIB: usize = 1 << 20;
/// The reference server's defaults: files over 32 MiB go up in 8 MiB parts.
const PART: usize = 8 * MIB;
/// Large enough for ten parts; small enough that the three files one test
/// makes stay within what headless Chromium keeps of Blobs in memory (with
/// 200 MiB files, reads of the later ones failed: "the requested file could
/// not be read").
const SIZE: usize = 80 * MIB;
const PARTS: u32 = SIZE.div_ceil(PART) as u32;

/// The `bytesSent` values the app was told of, in order.
type Seen = Rc<RefCell<Vec<f64>>>;

/// Records every `bytesSent` the app is told of, for one attempt.
fn watch_progress(client: &upload_once::Client) -> (Seen, Closure<dyn FnMut(wasm_bindgen::JsValue)>) {
    let seen: Seen = Rc::default();
    let sink = seen.clone();
    let listener = Closure::<dyn FnMut(wasm_bindgen::JsValue)>::new(move |v: wasm_bindgen::JsValue| {
        if let Some(sent) = js_sys::Reflect::get(&v, &"bytesSent".into()).ok().and_then(|b| b.as_f64()) {
            sink.borrow_mut().push(sent);
        }
    });
    client.subscribe(ListenerKind::Change, listener.as_ref().unchecked_ref::<js_sys::Function>().clone());
    (seen, listener)
}

fn assert_progress_never_falls_back_far(seen: &[f64]) {
    // At most the parts on the wire (three) can be lost to a cut.
    for pair in seen.windows(2) {
        assert!(pair[1] >= pair[0] - (3 * PART) as f64, "progress fell from {} to {}", pair[0], pair[1]);
    }
}

#[wasm_bindgen_test]
async fn a_large_file_cut_mid_transfer_goes_on_after_a_reload_from_the_servers_parts() {
    let mut setup = Setup::new(1 << 30, "none").await;
    setup.opts.keep_file_max_bytes = 128 * MIB as u64;
    let kept_here = blobs_can_be_kept().await;
    let video = big_file("party.mp4", "video/mp4", SIZE, 7.0, 1);
    let (id, stored_before) = cut_mid_transfer(&setup, &video).await;

    let again = Rc::new(Faults::default());
    // The same options: this file is kept for a reload where the browser can.
    let second = open(setup.opts.clone(), &again).await;
    let (progress, _listener) = watch_progress(&second);
    second.restore().await.unwrap();
    if !kept_here {
        // WebKit's private-like profile keeps no files: picked again.
        wait_for("needs_file", 20_000.0, || only_record(&second).transfer == Transfer::NeedsFile).await;
        let added = second.add(vec![video]).await.unwrap();
        assert!(matches!(added[0], Added::Reattached(same) if same == id), "{:?}", added[0]);
    }
    settle(&second).await;
    let record = only_record(&second);
    assert_eq!(record.id, id, "the same attempt");
    assert_eq!(record.confirmation, Confirmation::Confirmed);
    let after = again.parts_stored(id);
    assert!(
        after.iter().all(|n| !stored_before.contains(n)),
        "no part the server had was sent again: {after:?} / {stored_before:?}"
    );
    assert!(after.len() as u32 <= PARTS - stored_before.len() as u32, "only the missing parts");
    let media = host_media(&setup.event).await;
    assert_eq!(media.len(), 1, "stored once");
    assert_eq!(media[0]["size"], SIZE as u64);
    let composite = media[0]["composite_sha256"].as_str().expect("the composite checksum of the parts");
    assert!(composite.ends_with(&format!("-{PARTS}")), "{composite}");
    let seen = progress.borrow();
    assert!(
        seen.first().is_some_and(|first| *first >= (stored_before.len() * PART) as f64 - (3 * PART) as f64),
        "progress resumed, not from 0: {:?}",
        seen.first()
    );
    assert_progress_never_falls_back_far(&seen);
    second.close();
}

#[wasm_bindgen_test]
async fn a_large_file_not_kept_goes_on_once_picked_again_and_another_file_is_never_spliced_in() {
    // The default cap (64 MiB): this file is not kept for a reload.
    let setup = Setup::new(1 << 30, "none").await;
    let video = big_file("clip.mp4", "video/mp4", SIZE, 9.0, 2);
    let (id, stored_before) = cut_mid_transfer(&setup, &video).await;

    let again = Rc::new(Faults::default());
    let second = setup.reload(&again).await;
    wait_for("needs_file", 20_000.0, || second.record(&id).is_some_and(|r| r.transfer == Transfer::NeedsFile)).await;

    // Same name, size and time, other bytes: a new upload of its own.
    let impostor = big_file("clip.mp4", "video/mp4", SIZE, 9.0, 3);
    let added = second.add(vec![impostor]).await.unwrap();
    let Added::NotSameFile { id: other, waiting } = added[0] else {
        panic!("a different file is a new attempt: {:?}", added[0])
    };
    assert_eq!(waiting, id, "the guest is told which upload still waits for its own file");
    assert_eq!(second.record(&id).unwrap().transfer, Transfer::NeedsFile, "the first still waits for its own file");

    // The same file: the first attempt goes on from the server's parts.
    let added = second.add(vec![video]).await.unwrap();
    assert!(matches!(added[0], Added::Reattached(same) if same == id), "{:?}", added[0]);
    settle(&second).await;
    assert_eq!(second.record(&id).unwrap().confirmation, Confirmation::Confirmed, "{:?}", second.record(&id));
    assert_eq!(second.record(&other).unwrap().confirmation, Confirmation::Confirmed, "{:?}", second.record(&other));
    let after = again.parts_stored(id);
    assert!(after.iter().all(|n| !stored_before.contains(n)), "no stored part sent again");
    assert!((after.len() as u32) < PARTS, "it went on, it did not start over");
    assert_eq!(again.parts_stored(other).len() as u32, PARTS, "the other file went up whole");
    assert_eq!(host_media(&setup.event).await.len(), 2);
    second.close();
}
