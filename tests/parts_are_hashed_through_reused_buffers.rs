//! A part's SHA-256 is read into buffers the page reuses (a BYOB reader of the
//! Blob's byte stream) rather than a new buffer per part: the digest must
//! still be of that slice's bytes only, whatever buffer held them before, and
//! a read that stalls (Chromium's reads of a Blob made in the page sometimes
//! never settle) must end in the slice's digest, not a hang.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

const MIB: u32 = 1024 * 1024;

/// Bytes that differ at every offset within a part (a digest over the wrong
/// range, or over a buffer's stale tail, cannot match by chance).
fn varied_bytes(len: u32) -> js_sys::Uint8Array {
    let make = js_sys::Function::new_with_args(
        "len",
        "const b = new Uint8Array(len); let x = 2463534242; \
         for (let i = 0; i < len; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; b[i] = x & 255; } return b;",
    );
    make.call1(&JsValue::NULL, &JsValue::from(len)).unwrap().unchecked_into()
}

/// SHA-256 of `bytes[start..end)` straight from WebCrypto over the array
/// (no Blob, no stream): what the library's digest must equal.
async fn reference_sha256(bytes: &js_sys::Uint8Array, start: u32, end: u32) -> String {
    let digest = js_sys::Function::new_with_args(
        "view",
        "return crypto.subtle.digest('SHA-256', view).then((d) => \
           Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, '0')).join(''));",
    );
    let promise: js_sys::Promise = digest.call1(&JsValue::NULL, &bytes.subarray(start, end)).unwrap().unchecked_into();
    JsFuture::from(promise).await.unwrap().as_string().unwrap()
}

/// A Blob-like object over `bytes` whose slices stream them as a byte
/// stream (256 KiB a read, as a browser's file reads come), so the pooled
/// path is taken wherever the engine has byte streams; `arrayBuffer()` reads
/// the same bytes. (A Blob made in the page may stall in Chromium, which
/// would send the rest of this test down the other path.)
fn streamed_blob(bytes: &js_sys::Uint8Array) -> web_sys::Blob {
    let make = js_sys::Function::new_with_args(
        "bytes",
        "const real = new Blob([bytes]); \
         return { size: bytes.length, slice(s, e) { const part = real.slice(s, e); let pos = s; return { \
           size: part.size, arrayBuffer: () => part.arrayBuffer(), \
           stream() { return new ReadableStream({ type: 'bytes', pull(c) { \
             const r = c.byobRequest; const n = Math.min(262144, r.view.byteLength, e - pos); \
             r.view.set(bytes.subarray(pos, pos + n)); pos += n; r.respond(n); \
             if (pos >= e) c.close(); } }); } }; } };",
    );
    make.call1(&JsValue::NULL, bytes).unwrap().unchecked_into()
}

#[wasm_bindgen_test]
async fn every_slice_hashes_to_its_own_bytes_whatever_buffer_it_was_read_into() {
    let len = 20 * MIB + 12_345;
    let bytes = varied_bytes(len);
    let blob = streamed_blob(&bytes);
    let before = upload_once::env::hash_reads();
    // One part, then the next (it reuses the first's buffer), then three at
    // once (three buffers out of the pool), the last one short; then slices
    // smaller than any buffer the pool holds, an empty one, and one too
    // large to pool.
    let one_by_one = [(0, 8 * MIB), (8 * MIB, 16 * MIB)];
    let at_once = [(0, 8 * MIB), (8 * MIB, 16 * MIB), (16 * MIB, len)];
    let small = [(5, 17), (3 * MIB + 1, 3 * MIB + 1), (MIB - 3, 2 * MIB + 5), (0, len)];
    for (start, end) in one_by_one.iter().chain(&small) {
        let got = upload_once::env::sha256_hex(&blob, *start as u64, *end as u64).await.unwrap();
        assert_eq!(got, reference_sha256(&bytes, *start, *end).await, "the slice [{start}, {end})");
    }
    let hashed = futures_join(&blob, &at_once).await;
    for ((start, end), got) in at_once.iter().zip(hashed) {
        assert_eq!(
            got,
            reference_sha256(&bytes, *start, *end).await,
            "the part [{start}, {end}) hashed beside two others"
        );
    }

    let after = upload_once::env::hash_reads();
    // Pooling stays on where the engine's streams have BYOB readers (and no
    // two Blobs stalled in this page before).
    if before.pooling && after.pooling {
        // Every non-empty slice of at most 16 MiB went through the pool: two
        // parts, two small slices, three parts at once.
        assert_eq!(after.pooled - before.pooled, 7, "{before:?} → {after:?}");
        // The second part, both small slices and at least one of the three.
        assert!(after.reused - before.reused >= 4, "buffers were reused: {before:?} → {after:?}");
    } else {
        web_sys::console::log_1(&format!("hashing read with arrayBuffer() here: {before:?} → {after:?}").into());
    }
}

/// Hashes the ranges of `blob` at once, in order.
async fn futures_join(blob: &web_sys::Blob, ranges: &[(u32, u32)]) -> Vec<String> {
    let results: Rc<RefCell<Vec<Option<String>>>> = Rc::new(RefCell::new(vec![None; ranges.len()]));
    for (i, (start, end)) in ranges.iter().copied().enumerate() {
        let (blob, results) = (blob.clone(), results.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let hex = upload_once::env::sha256_hex(&blob, start as u64, end as u64).await.unwrap();
            results.borrow_mut()[i] = Some(hex);
        });
    }
    wait_for("the parts' digests", 30_000.0, || results.borrow().iter().all(Option::is_some)).await;
    results.take().into_iter().map(Option::unwrap).collect()
}

#[wasm_bindgen_test]
async fn a_read_that_never_settles_ends_in_the_slices_digest_and_the_blob_is_read_whole_after() {
    let bytes = varied_bytes(3 * MIB);
    // A Blob-like object whose slices' byte streams give their first 64 KiB
    // and then never answer again (what Chromium's reads of an in-page Blob
    // sometimes do), while `arrayBuffer()` reads the real bytes.
    let make = js_sys::Function::new_with_args(
        "bytes",
        "const real = new Blob([bytes]); const seen = { streams: 0 }; \
         const blob = { size: real.size, slice(s, e) { const part = real.slice(s, e); return { \
           size: part.size, arrayBuffer: () => part.arrayBuffer(), \
           stream() { seen.streams++; let given = false; return new ReadableStream({ type: 'bytes', \
             pull(c) { if (given) return new Promise(() => {}); given = true; \
               const r = c.byobRequest; const n = Math.min(65536, r.view.byteLength); \
               r.view.set(new Uint8Array(bytes.buffer, s, n)); r.respond(n); } }); } }; } }; \
         return { blob, seen };",
    );
    let fixture = make.call1(&JsValue::NULL, &bytes).unwrap();
    let blob: web_sys::Blob = js_sys::Reflect::get(&fixture, &"blob".into()).unwrap().unchecked_into();
    let seen = js_sys::Reflect::get(&fixture, &"seen".into()).unwrap();
    let streams = || js_sys::Reflect::get(&seen, &"streams".into()).unwrap().as_f64().unwrap();

    let pooling = upload_once::env::hash_reads().pooling;
    let first = (MIB, 3 * MIB);
    let digest: Rc<RefCell<Option<Result<String, String>>>> = Rc::default();
    let out = digest.clone();
    let hashing = blob.clone();
    wasm_bindgen_futures::spawn_local(async move {
        *out.borrow_mut() = Some(upload_once::env::sha256_hex(&hashing, first.0 as u64, first.1 as u64).await);
    });
    // The stall is given up after 2 s; 20 s bounds a hang.
    wait_for("the stalled slice's digest", 20_000.0, || digest.borrow().is_some()).await;
    let got = digest.take().unwrap().expect("a stalled read is not an error");
    assert_eq!(got, reference_sha256(&bytes, first.0, first.1).await);
    if pooling {
        assert_eq!(streams(), 1.0, "the slice was first read through its stream");
    }

    // The rest of that Blob is read whole: no second wait on its streams.
    let streams_before = streams();
    let got = upload_once::env::sha256_hex(&blob, 0, MIB as u64).await.unwrap();
    assert_eq!(got, reference_sha256(&bytes, 0, MIB).await);
    assert_eq!(streams(), streams_before, "a Blob that stalled once is not streamed again");
}
