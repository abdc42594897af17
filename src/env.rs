//! The browser environment the core is not allowed to touch: the clock,
//! secure randomness, timers, online state and a wake-up signal for the
//! driver loop.

use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use futures_util::future::{Either, select};
use futures_util::task::AtomicWaker;

use js_sys::{Function, Promise, Reflect};
use upload_once_core::Entropy;
use upload_once_core::time::UnixMillis;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    fn date_now() -> f64;
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(buf: &mut [u8]);
}

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = sha256Hex)]
    fn sha256_hex_js(blob: &web_sys::Blob, start: f64, end: f64, off_page: bool) -> Promise;
    #[wasm_bindgen(js_name = prepareHashWorker)]
    fn prepare_hash_worker_js();
    #[wasm_bindgen(js_name = hashReadStats)]
    fn hash_read_stats_js() -> Vec<u32>;
    #[wasm_bindgen(js_name = storageRoom)]
    fn storage_room_js() -> Promise;
    #[wasm_bindgen(js_name = isReadable)]
    fn is_readable_js(blob: &web_sys::Blob) -> Promise;
    #[wasm_bindgen(js_name = readFailureIsReal)]
    fn read_failure_is_real_js() -> Promise;
    #[wasm_bindgen(js_name = wakeAfter)]
    fn wake_after(ms: f64, callback: &Function) -> f64;
    #[wasm_bindgen(js_name = cancelWake)]
    fn cancel_wake(id: f64);
    #[wasm_bindgen(js_name = wakesInWorker)]
    fn wakes_in_worker_js() -> bool;
}

/// Whether this page's timers are also armed in a dedicated worker, whose
/// timers a hidden page's throttling does not slow (see `glue.js`).
pub fn wakes_in_worker() -> bool {
    wakes_in_worker_js()
}

/// After a read failed: whether it failed for the file itself, not because
/// the page is going away (then reads fail too, for that reason alone).
pub async fn read_failure_is_real() -> bool {
    let real = wasm_bindgen_futures::JsFuture::from(read_failure_is_real_js()).await;
    real.ok().and_then(|v| v.as_bool()).unwrap_or(false)
}

/// The SHA-256 of these bytes, lowercase hex (WebCrypto; empty where it is
/// missing).
pub async fn sha256_of_bytes(bytes: &[u8]) -> Result<String, String> {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(|_| "no Blob".to_owned())?;
    sha256_hex(&blob, 0, bytes.len() as u64).await
}

/// Whether the browser still reads this Blob (a picked file that changed
/// on disk since is refused).
pub async fn is_readable(blob: &web_sys::Blob) -> bool {
    let read = wasm_bindgen_futures::JsFuture::from(is_readable_js(blob)).await;
    read.ok().and_then(|v| v.as_bool()).unwrap_or(true)
}

/// Bytes this site may still store, from `navigator.storage.estimate()`;
/// `None` where the browser does not say.
pub async fn storage_room() -> Option<u64> {
    let room = wasm_bindgen_futures::JsFuture::from(storage_room_js()).await.ok()?;
    room.as_f64().filter(|r| r.is_finite() && *r >= 0.0).map(|r| r as u64)
}

/// The SHA-256 of bytes `[start, end)` of a Blob, lowercase hex (WebCrypto,
/// over that slice only; empty where WebCrypto is missing).
pub async fn sha256_hex(blob: &web_sys::Blob, start: u64, end: u64) -> Result<String, String> {
    sha256_hex_of(sha256_hex_start(blob, start, end)).await
}

/// [`sha256_hex`], started now: its promise, to be awaited later with
/// [`sha256_hex_of`]. A whole file (a photo's hash before its authorize) is
/// read and digested in the page's hash worker where one can be made, off
/// the page's thread; a part is hashed on the page, where its buffers count
/// against the parts' memory bound (`glue.js`).
pub fn sha256_hex_start(blob: &web_sys::Blob, start: u64, end: u64) -> Promise {
    let whole = start == 0 && end == blob.size() as u64;
    sha256_hex_js(blob, start as f64, end as f64, whole)
}

/// Makes the page's hash worker soon (on a timer), where whole files will
/// be hashed, so that its start is not on the way from the first pick to
/// the first byte.
pub fn prepare_hash_worker() {
    prepare_hash_worker_js();
}

/// The answer of a hash started with [`sha256_hex_start`].
pub async fn sha256_hex_of(started: Promise) -> Result<String, String> {
    let hashed = wasm_bindgen_futures::JsFuture::from(started).await;
    hashed.map(|v| v.as_string().unwrap_or_default()).map_err(|e| js_sys::Error::from(e).message().into())
}

/// How [`sha256_hex`] has read in this page and its hash worker (tests and
/// diagnostics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashReads {
    /// Reads made into reused buffers (a BYOB reader of the slice's byte
    /// stream), on the page and in the hash worker.
    pub pooled: u32,
    /// Of those, the ones that reused a buffer an earlier read left.
    pub reused: u32,
    /// Whether the page still reads that way (not once Blob streams turned
    /// out to have no BYOB reader, or two Blobs stalled).
    pub pooling: bool,
    /// Whether the hash worker still reads that way (true before it has
    /// read anything).
    pub pooling_in_worker: bool,
    /// Hashes the worker answered (whole files, off the page's thread).
    pub in_worker: u32,
}

/// How [`sha256_hex`] has read so far.
pub fn hash_reads() -> HashReads {
    let stats = hash_read_stats_js();
    let at = |i: usize| stats.get(i).copied().unwrap_or(0);
    HashReads { pooled: at(0), reused: at(1), pooling: at(2) == 1, pooling_in_worker: at(3) == 1, in_worker: at(4) }
}

/// Milliseconds since the epoch, from `Date.now()`.
pub fn now() -> UnixMillis {
    date_now() as UnixMillis
}

/// Randomness from `crypto.getRandomValues` (ids must be unguessable).
#[derive(Debug, Default)]
pub struct CryptoEntropy;

impl Entropy for CryptoEntropy {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(65_536) {
            get_random_values(chunk);
        }
    }
}

/// The global object (`window`, or a worker's `self`).
pub fn global() -> JsValue {
    js_sys::global().into()
}

/// Reads `globalThis.<path>` (dot-separated), `undefined` when missing.
pub fn lookup(path: &str) -> JsValue {
    let mut value = global();
    for part in path.split('.') {
        if value.is_undefined() || value.is_null() {
            return JsValue::UNDEFINED;
        }
        value = Reflect::get(&value, &JsValue::from_str(part)).unwrap_or(JsValue::UNDEFINED);
    }
    value
}

/// `navigator.onLine` (true where unknown).
pub fn is_online() -> bool {
    lookup("navigator.onLine").as_bool().unwrap_or(true)
}

/// Resolves after `ms` milliseconds, on time in a hidden page too (see
/// `wakeAfter` in `glue.js`). Dropped before then, its timer is cancelled.
pub async fn sleep(ms: f64) {
    let alarm = Signal::default();
    alarm.wait(Some(now() + ms.max(0.0).ceil() as UnixMillis)).await;
}

/// Runs `fut` for at most `ms` milliseconds: `None` when time ran out.
pub async fn timeout<F: Future>(ms: f64, fut: F) -> Option<F::Output> {
    match select(pin!(fut), pin!(sleep(ms))).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}

/// Asks the browser to keep this origin's storage (`navigator.storage.persist()`).
/// `None` where the API is missing or failed.
pub async fn request_persistence() -> Option<bool> {
    let storage = lookup("navigator.storage");
    let persist = Reflect::get(&storage, &"persist".into()).ok()?.dyn_into::<Function>().ok()?;
    let promise = persist.call0(&storage).ok()?.dyn_into::<Promise>().ok()?;
    wasm_bindgen_futures::JsFuture::from(promise).await.ok()?.as_bool()
}

/// A pending wake (`wakeAfter`'s id) and the closure it calls.
type Timer = (f64, Closure<dyn FnMut()>);

#[derive(Default)]
struct SignalState {
    raised: Cell<bool>,
    waker: AtomicWaker,
    timer: RefCell<Option<Timer>>,
}

impl Drop for SignalState {
    /// A pending timer goes with the signal: the browser would otherwise
    /// call its freed closure later, which throws an uncaught error.
    fn drop(&mut self) {
        if let Some((id, _)) = self.timer.get_mut().take() {
            cancel_wake(id);
        }
    }
}

/// Wakes the driver loop: raised by inputs (a result arrived, a file was
/// added, the browser came online) or by a timer.
#[derive(Clone, Default)]
pub struct Signal(Rc<SignalState>);

impl Signal {
    /// Wakes the waiter (or makes its next wait return at once).
    pub fn raise(&self) {
        self.0.raised.set(true);
        self.0.waker.wake();
    }

    /// Waits until raised, or until `deadline` (epoch ms) when given.
    pub fn wait(&self, deadline: Option<UnixMillis>) -> impl Future<Output = ()> + 'static {
        let mut timer = self.0.timer.borrow_mut();
        if let Some((id, _)) = timer.take() {
            cancel_wake(id);
        }
        if let Some(at) = deadline {
            // The timer holds the signal weakly: a signal nobody waits on
            // any more (a closed uploader) is freed, and its timer cleared.
            let me = Rc::downgrade(&self.0);
            let closure = Closure::<dyn FnMut()>::new(move || {
                if let Some(state) = me.upgrade() {
                    Signal(state).raise();
                }
            });
            let delay = (at - now()).max(0) as f64;
            *timer = Some((wake_after(delay, closure.as_ref().unchecked_ref()), closure));
        }
        let state = self.0.clone();
        poll_fn(move |cx| {
            state.waker.register(cx.waker());
            if state.raised.replace(false) { Poll::Ready(()) } else { Poll::Pending }
        })
    }
}
