//! What this engine does with the browser features the client relies on,
//! measured in the page (the README's browser support table comes from
//! these lines; `cargo xtask test browser` prints them per engine).
//!
//! Each probe answers in one word and the test prints one line:
//! `engine-probe: <engine> | blob-in-idb=… | mixed-tx=… | …`. The only
//! hard assertions are the facts the client depends on everywhere (IndexedDB
//! opens, records are stored) and the profile the run says it is in (a
//! WebKit run without the test's persistent profile is Safari-private-like:
//! Blobs are refused, so the client's fallback really runs there).
#![cfg(target_arch = "wasm32")]

mod common;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

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

// A Blob alone in its own readwrite transaction, then read back and its
// bytes read: "kept", "refused:<error>", "lost" (stored but unreadable) or "timeout".
export async function probeBlobInIdb(name) {
  const db = await openDb(name);
  try {
    const tx = db.transaction(["b"], "readwrite");
    const done = txDone(tx);
    let put;
    try { put = await within(3000, req(tx.objectStore("b").put(blobOf(1000), "k"))); }
    catch (e) {
      // Then: does the transaction settle, and is the store still usable?
      let outcome = await within(3000, done);
      outcome = outcome === "timeout" ? "pending" : outcome.split(":")[0];
      const t = db.transaction(["b"], "readonly");
      const after = await within(2000, req(t.objectStore("b").count()).then(() => "ok", (e) => errName(e)));
      return `refused:${errName(e)}/${outcome}/${after === "timeout" ? "hangs" : after}`;
    }
    if (put === "timeout") return "timeout";
    const outcome = await within(3000, done);
    if (outcome !== "complete") return "refused:" + outcome;
    const rtx = db.transaction(["b"], "readonly");
    const back = await within(3000, req(rtx.objectStore("b").get("k")));
    if (!(back instanceof Blob)) return "lost";
    const bytes = new Uint8Array(await back.arrayBuffer());
    return bytes.length === 1000 && bytes[999] === 999 % 251 ? "kept" : "lost";
  } finally { db.close(); }
}

// A string and then a Blob in one readwrite transaction; then a new
// transaction on the same store and one on another store. Answers
// "<tx outcome>/<same store>/<other store>", e.g. "complete/ok/ok" or
// "pending/hangs/ok" (a transaction that never settles blocks its store).
// `onError` is what the page does with the failed request's error event:
// "default" (nothing: the transaction aborts), "prevent" (preventDefault:
// the transaction goes on) or "abort" (preventDefault, then tx.abort()).
export async function probeMixedTransaction(name, onError) {
  const db = await openDb(name);
  const tx = db.transaction(["b"], "readwrite");
  const done = txDone(tx);
  tx.onerror = null;
  const store = tx.objectStore("b");
  const handle = (e) => {
    if (onError === "default") return;
    e.preventDefault();
    if (onError === "abort") { try { tx.abort(); } catch (_) {} }
  };
  store.put("text", "s").onerror = handle;
  try { store.put(blobOf(1000), "k").onerror = handle; } catch (e) { return "throws:" + errName(e); }
  let outcome = await within(1500, done);
  if (outcome === "timeout") outcome = "pending";
  const later = async (s) => {
    const t = db.transaction([s], "readwrite");
    const d = txDone(t);
    t.objectStore(s).put("x", "later");
    const r = await within(1000, d);
    return r === "complete" ? "ok" : r === "timeout" ? "hangs" : r;
  };
  const same = await later("b");
  const other = await later("a");
  // Left open on purpose when something hangs (closing would wait forever).
  if (same === "ok") db.close();
  return `${outcome.split(":")[0]}/${same}/${other}`;
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

// XHR upload progress events for a PUT of `bytes` to `url` (any answer).
export function probeUploadProgress(url, bytes) {
  return new Promise((ok) => {
    const xhr = new XMLHttpRequest();
    let events = 0, last = 0;
    xhr.upload.onprogress = (e) => { events++; last = e.loaded; };
    xhr.onloadend = () => ok(events > 0 && last > 0 ? `ok(${events})` : "none");
    xhr.open("PUT", url);
    xhr.send(blobOf(bytes));
  });
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
    fn probe_blob_in_idb(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeMixedTransaction)]
    fn probe_mixed_transaction(name: &str, on_error: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeDurability)]
    fn probe_durability(name: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeWebLocks)]
    fn probe_web_locks() -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeBroadcastChannel)]
    fn probe_broadcast_channel() -> js_sys::Promise;
    #[wasm_bindgen(js_name = probeUploadProgress)]
    fn probe_upload_progress(url: &str, bytes: u32) -> js_sys::Promise;
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
    let blob = answer(probe_blob_in_idb(&common::unique("probe-blob"))).await;
    let mut mixed = Vec::new();
    for on_error in ["default", "prevent", "abort"] {
        mixed.push(format!("{on_error}:{}", answer(probe_mixed_transaction(&common::unique("probe-mixed"), on_error)).await));
    }
    let mixed = mixed.join(",");
    let durability = answer(probe_durability(&common::unique("probe-durability"))).await;
    let locks = answer(probe_web_locks()).await;
    let channel = answer(probe_broadcast_channel()).await;
    // Any PUT the server answers will do: the progress events are the browser's.
    let progress = answer(probe_upload_progress(&format!("{}/storage/probe?sig=none", common::API), 2_000_000)).await;
    let persist = answer(probe_persist()).await;
    let line = format!(
        "engine-probe: {engine} | blob-in-idb={blob} | mixed-tx={mixed} | durability={durability} | web-locks={locks} | broadcast-channel={channel} | upload-progress={progress} | persist={persist} | ua={}",
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
