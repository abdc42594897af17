//! What this engine does with the browser features the client relies on,
//! measured in the page (the README's browser support table comes from
//! these lines; `cargo xtask test browser` prints them per engine).
//!
//! Upload progress is measured end to end instead (tests/e2e/engines_*.mjs:
//! on loopback a transfer is over before a progress event could show it
//! part-way). Each probe answers in one word and the test prints one line:
//! `engine-probe: <engine> | blob-in-idb=… | mixed-tx=… | …`. The only
//! hard assertions are the facts the client depends on everywhere (IndexedDB
//! opens, records are stored) and the profile the run says it is in (a
//! WebKit run without the test's persistent profile is Safari-private-like:
//! Blobs are refused, so the client's fallback really runs there).
#![cfg(target_arch = "wasm32")]

use crate::common;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

#[wasm_bindgen(inline_js = r#"
const within = (ms, p) => Promise.race([p, new Promise((r) => setTimeout(() => r("timeout"), ms))]);
const req = (r) => new Promise((ok, ko) => { r.onsuccess = () => ok(r.result); r.onerror = (e) => { e.preventDefault(); ko(r.error); }; });
const txDone = (tx) => new Promise((ok) => {
  tx.oncomplete = () => ok("complete");
  tx.onabort = () => ok("abort:" + (tx.error ? tx.error.name : "none"));
  tx.onerror = (e) => e.preventDefault();
});
const errName = (e) => (e && e.name ? e.name : String(e));
async function openDb(name) {
  const open = indexedDB.open(name, 1);
  open.onupgradeneeded = () => { open.result.createObjectStore("a"); open.result.createObjectStore("b"); };
  return req(open);
}
function blobOf(n) { return new Blob([new Uint8Array(n).map((_, i) => i % 251)], { type: "image/png" }); }

// What happens to a transaction whose failed request's error event the page
// handles with `onError`: "default" (left alone: the transaction should
// abort), "prevent" (preventDefault: the transaction goes on) or "abort"
// (preventDefault, then tx.abort()). Answers "<outcome>@<ms>" with outcome
// complete, abort or pending (not settled within 4 s).
function settle(tx, onError) {
  const started = Date.now();
  const done = new Promise((ok) => {
    tx.oncomplete = () => ok("complete");
    tx.onabort = () => ok("abort");
  });
  tx.onerror = (e) => {
    if (onError === "default") return;
    e.preventDefault();
    if (onError === "abort") { try { tx.abort(); } catch (_) {} }
  };
  return within(4000, done).then((r) => (r === "timeout" ? "pending" : `${r}@${Date.now() - started}ms`));
}
// Whether a new readwrite transaction on `store` completes (a transaction
// that never settles blocks every later one on its stores): "ok" or "hangs".
async function usable(db, store) {
  const t = db.transaction([store], "readwrite");
  const d = txDone(t);
  t.objectStore(store).put("x", "later");
  const r = await within(1500, d);
  return r === "complete" ? "ok" : r === "timeout" ? "hangs" : r;
}

// A Blob alone in its own readwrite transaction, then read back and its
// bytes read: "kept", "lost" (stored but unreadable), or
// "refused:<error>/<outcome>/<store usable>".
export async function probeBlobInIdb(name, onError) {
  const db = await openDb(name);
  const tx = db.transaction(["b"], "readwrite");
  let error = null;
  tx.objectStore("b").put(blobOf(1000), "k").addEventListener("error", (e) => { error = e.target.error; });
  const outcome = await settle(tx, onError);
  if (!outcome.startsWith("complete") || error) {
    const after = await usable(db, "b");
    if (after === "ok") db.close();
    return `refused:${errName(error)}/${outcome}/${after}`;
  }
  const rtx = db.transaction(["b"], "readonly");
  const back = await within(3000, req(rtx.objectStore("b").get("k")));
  db.close();
  if (!(back instanceof Blob)) return "lost";
  const bytes = new Uint8Array(await back.arrayBuffer());
  return bytes.length === 1000 && bytes[999] === 999 % 251 ? "kept" : "lost";
}

// A string and then a Blob in one readwrite transaction. Answers
// "<outcome>/<same store usable>/<other store usable>".
export async function probeMixedTransaction(name, onError) {
  const db = await openDb(name);
  const tx = db.transaction(["b"], "readwrite");
  const store = tx.objectStore("b");
  store.put("text", "s");
  try { store.put(blobOf(1000), "k"); } catch (e) { return "throws:" + errName(e); }
  const outcome = await settle(tx, onError);
  const same = await usable(db, "b");
  const other = await usable(db, "a");
  // Left open on purpose when something hangs (closing would wait forever).
  if (same === "ok") db.close();
  return `${outcome}/${same}/${other}`;
}

// Whether a readwrite transaction reports the durability it was asked for.
export function probeDurability(name) {
  return openDb(name).then((db) => {
    try {
      const tx = db.transaction(["a"], "readwrite", { durability: "strict" });
      const d = tx.durability;
      tx.abort();
      return d === "strict" ? "strict" : d === undefined ? "ignored" : "reports-" + d;
    } finally { db.close(); }
  });
}

export async function probeWebLocks() {
  if (!navigator.locks || typeof navigator.locks.request !== "function") return "missing";
  const name = "probe-" + Math.random();
  let second = "none";
  await navigator.locks.request(name, async () => {
    await navigator.locks.request(name, { ifAvailable: true }, (lock) => { second = lock ? "granted-twice" : "exclusive"; });
  });
  return second === "exclusive" ? "ok" : second;
}

export async function probeBroadcastChannel() {
  if (typeof BroadcastChannel !== "function") return "missing";
  const name = "probe-" + Math.random();
  const a = new BroadcastChannel(name), b = new BroadcastChannel(name);
  const got = new Promise((ok) => { b.onmessage = (m) => ok(m.data === "hi" ? "ok" : "garbled"); });
  a.postMessage("hi");
  const r = await within(2000, got);
  a.close(); b.close();
  return r === "timeout" ? "no-delivery" : r;
}

// Whether a Blob's stream is a byte stream with a BYOB reader (the library
// then hashes parts into reused buffers, else with arrayBuffer()).
export function probeBlobByob() {
  try {
    new Blob([new Uint8Array(1)]).stream().getReader({ mode: "byob" }).cancel();
    return "yes";
  } catch (e) {
    return "no:" + errName(e);
  }
}

// Private browsing tells: Firefox disables service workers there.
export function serviceWorkers() {
  return "serviceWorker" in navigator && navigator.serviceWorker ? "present" : "missing";
}

export async function probeWakeLock() {
  if (!("wakeLock" in navigator)) return "missing";
  try {
    const sentinel = await within(3000, navigator.wakeLock.request("screen"));
    if (sentinel === "timeout") return "pending";
    await sentinel.release();
    return "granted";
  } catch (e) {
    return "refused:" + errName(e);
  }
}

export async function probePersist() {
  if (!navigator.storage || typeof navigator.storage.persist !== "function") return "missing";
  try { return (await within(3000, navigator.storage.persist())) === true ? "granted" : "denied"; } catch (e) { return "error:" + errName(e); }
}

export function engineName() {
  const ua = navigator.userAgent;
  const profile = ua.includes("UploadOnceTestProfile") ? "persistent" : "default";
  if (/Firefox\//.test(ua)) return "firefox";
  if (/Chrome\//.test(ua)) return "chromium";
  if (/AppleWebKit\//.test(ua)) return profile === "persistent" ? "webkit-persistent" : "webkit-private";
  return "unknown";
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = probeBlobInIdb)]
    fn probe_blob_in_idb(name: &str, on_error: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeMixedTransaction)]
    fn probe_mixed_transaction(name: &str, on_error: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeDurability)]
    fn probe_durability(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeWebLocks)]
    fn probe_web_locks() -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeBroadcastChannel)]
    fn probe_broadcast_channel() -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeBlobByob)]
    fn probe_blob_byob() -> String;
    #[wasm_bindgen(js_name = serviceWorkers)]
    fn service_workers() -> String;
    #[wasm_bindgen(js_name = probeWakeLock)]
    fn probe_wake_lock() -> js_sys::Promise;
    #[wasm_bindgen(js_name = probePersist)]
    fn probe_persist() -> js_sys::Promise;
    #[wasm_bindgen(js_name = engineName)]
    fn engine_name() -> String;
}

async fn answer(p: js_sys::Promise) -> String {
    match JsFuture::from(p).await {
        Ok(v) => v.as_string().unwrap_or_else(|| format!("{v:?}")),
        Err(e) => format!("threw:{}", upload_once::store::storage_error(&e)),
    }
}

#[wasm_bindgen_test]
async fn what_this_engine_does() {
    let engine = engine_name();
    let blob = answer(probe_blob_in_idb(&common::unique("probe-blob"), "default")).await;
    let mut detail = Vec::new();
    for on_error in ["default", "prevent", "abort"] {
        detail.push(format!(
            "blob-alone:{on_error}:{}",
            answer(probe_blob_in_idb(&common::unique("probe-blob"), on_error)).await
        ));
        detail.push(format!(
            "after-a-put:{on_error}:{}",
            answer(probe_mixed_transaction(&common::unique("probe-mixed"), on_error)).await
        ));
    }
    let mixed = detail.join(",");
    let durability = answer(probe_durability(&common::unique("probe-durability"))).await;
    let locks = answer(probe_web_locks()).await;
    let channel = answer(probe_broadcast_channel()).await;
    let persist = answer(probe_persist()).await;
    let wake_lock = answer(probe_wake_lock()).await;
    let line = format!(
        "engine-probe: {engine} | blob-in-idb={blob} | refused-request-handling={mixed} | durability={durability} | web-locks={locks} | broadcast-channel={channel} | persist={persist} | blob-byob={} | service-worker={} | wake-lock={wake_lock} | ua={}",
        probe_blob_byob(),
        service_workers(),
        web_sys::window().unwrap().navigator().user_agent().unwrap_or_default()
    );
    web_sys::console::log_1(&line.clone().into());

    assert!(!blob.starts_with("threw") && !mixed.starts_with("threw"), "IndexedDB opens here: {line}");
    match engine.as_str() {
        // Stock WebKitWebDriver sessions are ephemeral (Safari-private-like).
        "webkit-private" => assert!(blob.starts_with("refused"), "a WebKit private profile refuses Blobs: {line}"),
        "webkit-persistent" | "chromium" | "firefox" => assert_eq!(blob, "kept", "{line}"),
        _ => {}
    }
}
