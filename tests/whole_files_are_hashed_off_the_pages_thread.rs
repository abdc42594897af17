//! A whole file's SHA-256 (a photo's, before its authorize) is read and
//! digested in the page's hash worker, not on the page's thread, which a
//! phone needs for its uploads (issue 34); a part's stays on the page,
//! where the parts' memory bound is measured. Either way the digest is of
//! the bytes asked for.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

/// Counts the page's own `crypto.subtle.digest` calls from now on;
/// returns a function that says how many there were and puts it back.
fn count_the_pages_digests() -> js_sys::Function {
    let install = js_sys::Function::new_no_args(
        "const subtle = crypto.subtle; const real = subtle.digest; let calls = 0; \
         subtle.digest = function (...args) { calls++; return real.apply(subtle, args); }; \
         return () => { delete subtle.digest; return calls; };",
    );
    install.call0(&JsValue::NULL).unwrap().unchecked_into()
}

/// SHA-256 of a file's bytes as its `arrayBuffer()` gives them, straight
/// from WebCrypto on the page: what the library's digest must equal.
async fn reference_sha256(file: &web_sys::Blob, start: u32, end: u32) -> String {
    let digest = js_sys::Function::new_with_args(
        "blob, start, end",
        "return blob.slice(start, end).arrayBuffer().then((b) => crypto.subtle.digest('SHA-256', b)).then((d) => \
           Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, '0')).join(''));",
    );
    let promise: js_sys::Promise =
        digest.call3(&JsValue::NULL, file, &JsValue::from(start), &JsValue::from(end)).unwrap().unchecked_into();
    JsFuture::from(promise).await.unwrap().as_string().unwrap()
}

#[wasm_bindgen_test]
async fn a_whole_file_is_digested_in_the_worker_and_a_part_on_the_page() {
    let photo = file("whole.jpg", "image/jpeg", 300_000, 1_700_000_000_000.0);
    let size = photo.size() as u64;
    let whole_expected = reference_sha256(&photo, 0, size as u32).await;
    let part_expected = reference_sha256(&photo, 1_000, 200_000).await;
    assert_ne!(whole_expected, part_expected);

    let before = upload_once::env::hash_reads();
    let stop_counting = count_the_pages_digests();
    let whole = upload_once::env::sha256_hex(&photo, 0, size).await;
    let page_digests_for_the_whole = stop_counting.call0(&JsValue::NULL).unwrap().as_f64().unwrap();
    let after_whole = upload_once::env::hash_reads();

    assert_eq!(whole.as_deref(), Ok(whole_expected.as_str()), "the whole file's digest");
    assert_eq!(page_digests_for_the_whole, 0.0, "the page's thread digested none of it");
    assert_eq!(after_whole.in_worker, before.in_worker + 1, "the hash worker answered it");

    let stop_counting = count_the_pages_digests();
    let part = upload_once::env::sha256_hex(&photo, 1_000, 200_000).await;
    let page_digests_for_the_part = stop_counting.call0(&JsValue::NULL).unwrap().as_f64().unwrap();

    assert_eq!(part.as_deref(), Ok(part_expected.as_str()), "the part's digest is of its own bytes");
    assert_eq!(page_digests_for_the_part, 1.0, "a part is digested on the page");
    assert_eq!(upload_once::env::hash_reads().in_worker, after_whole.in_worker, "not in the worker");
}

#[wasm_bindgen_test]
async fn files_hashed_at_once_in_the_worker_each_get_their_own_digest() {
    let files: Vec<web_sys::File> =
        (0..5).map(|i| file(&format!("w{i}.jpg"), "image/jpeg", 50_000 + i * 7_001, 1_700_000_000_000.0)).collect();
    let mut expected = Vec::new();
    for f in &files {
        expected.push(reference_sha256(f, 0, f.size() as u32).await);
    }
    let before = upload_once::env::hash_reads();
    // All five asked for at once: each answer goes back to its own caller.
    let started: Vec<js_sys::Promise> =
        files.iter().map(|f| upload_once::env::sha256_hex_start(f, 0, f.size() as u64)).collect();
    for (promise, want) in started.into_iter().zip(&expected) {
        assert_eq!(upload_once::env::sha256_hex_of(promise).await.as_deref(), Ok(want.as_str()));
    }
    assert_eq!(upload_once::env::hash_reads().in_worker, before.in_worker + 5);
}
