//! An uploader in a dedicated worker, driven by its page through messages
//! (`serveUploader`): the page keeps its main thread for itself, and the
//! worker holds the uploader, its IndexedDB, XHRs, locks and timers.
//!
//! The worker first posts `{ uploadOnceEvent: "ready" }`: calls the page
//! posted before (while the worker loaded the package) reached no listener.
//! Then the page posts `{ uploadOnce: n, call, args }` (`UploaderCall` in the
//! TypeScript types), one of `Uploader`'s methods by name, and gets `{
//! uploadOnce: n, value }` or `{ uploadOnce: n, error: { code, message } }`
//! back; picked `File`s go in `args` as they are (they are cloneable, and
//! their bytes are not copied). Once `open` has answered, the uploader's
//! events follow as `{ uploadOnceEvent, value }`. Other messages on the same
//! port are left to the app. The dispatch is a few lines of JS over the
//! `Uploader` class (`serveUploaderOn` in `glue.js`), so the package pays
//! almost nothing for it. README, "The uploader in a worker", has a
//! page-side proxy.
//!
//! Also here: `handOver`, `takeBack` and `settleBackgroundFetch`, uploads
//! that outlive the tab (src/client/background.rs), JS over the `Uploader`
//! class in the same way.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::js::Uploader;

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = serveUploaderOn, catch)]
    fn serve_uploader_on(port: &JsValue, open: &js_sys::Function) -> Result<(), JsValue>;
}

/// Serves one uploader to whoever posts to `port`: the worker's own scope
/// (`self`, the page that made the worker) or a `MessagePort`. Call it once,
/// after `init()`; the page then sends `open` with its `UploaderOptions`.
#[wasm_bindgen(js_name = serveUploader)]
pub fn serve_uploader(#[wasm_bindgen(unchecked_param_type = "UploaderPort")] port: JsValue) -> Result<(), JsValue> {
    let open = Closure::<dyn FnMut(JsValue) -> Promise>::new(Uploader::open);
    serve_uploader_on(&port, open.into_js_value().unchecked_ref())
}

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = handOverWith)]
    fn hand_over_with(uploader: &JsValue, registration: &JsValue, title: &str) -> Promise;
    #[wasm_bindgen(js_name = takeBackWith)]
    fn take_back_with(uploader: &JsValue, registration: &JsValue) -> Promise;
    #[wasm_bindgen(js_name = settleWith)]
    fn settle_with(registration: &JsValue, open: &js_sys::Function) -> Promise;
}

/// Hands the transfers of `uploader` that go up in one PUT to a Background
/// Fetch of the page's service worker (`registration`), where the browser
/// has the API (Chromium): every file not sent yet is authorized first
/// (each needs its signed URL); then each is paused here, stored as handed
/// over (its view says `inBackground`) and let go, and the browser sends
/// the same PUTs, also after the tab is closed, showing their progress in
/// its download UI under `title`. The service worker confirms each one when
/// the fetch ends (`settleBackgroundFetch`). Resolves to the ids handed
/// over (none without the API, or with nothing left to send in one PUT);
/// if the browser refuses the fetch, they go on in the page.
#[wasm_bindgen(js_name = handOver, unchecked_return_type = "Promise<string[]>")]
pub fn hand_over(
    #[wasm_bindgen(unchecked_param_type = "Uploader")] uploader: JsValue,
    #[wasm_bindgen(unchecked_param_type = "ServiceWorkerRegistration")] registration: JsValue,
    title: &str,
) -> Promise {
    hand_over_with(&uploader, &registration, title)
}

/// Takes back every transfer of `uploader` handed to a Background Fetch
/// (`handOver`): its fetches still running are noted as taken back (so the
/// service worker does not read their abort as the guest's cancel) and
/// aborted, and the attempts go on in the page from what the server says.
/// Call it when the page opens and whenever it is seen again. Resolves to
/// the ids taken back.
#[wasm_bindgen(js_name = takeBack, unchecked_return_type = "Promise<string[]>")]
pub fn take_back(
    #[wasm_bindgen(unchecked_param_type = "Uploader")] uploader: JsValue,
    #[wasm_bindgen(unchecked_param_type = "ServiceWorkerRegistration")] registration: JsValue,
) -> Promise {
    take_back_with(&uploader, &registration)
}

/// In the page's service worker, when a Background Fetch that `handOver`
/// started ends (`backgroundfetchsuccess`, `backgroundfetchfail`,
/// `backgroundfetchabort`): opens the same uploader there, asks the server
/// what became of each attempt the fetch carried, and confirms those whose
/// bytes are stored, with the same idempotent confirm (the same attempt
/// ids). A fetch the guest cancelled in the browser's download UI cancels
/// them. Resolves to what it did, or `null` for a fetch that is not the
/// uploader's, still runs, or was taken back by a page (`takeBack`).
#[wasm_bindgen(js_name = settleBackgroundFetch, unchecked_return_type = "Promise<BackgroundFetchSettled | null>")]
pub fn settle_background_fetch(
    #[wasm_bindgen(unchecked_param_type = "EndedBackgroundFetch")] registration: JsValue,
) -> Promise {
    let open = Closure::<dyn FnMut(JsValue) -> Promise>::new(Uploader::open);
    settle_with(&registration, open.into_js_value().unchecked_ref())
}
