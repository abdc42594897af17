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
//! Also here: `settleBackgroundFetch`, the service worker's side of
//! `Uploader.handOver` (src/client/background.rs).

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
    #[wasm_bindgen(unchecked_param_type = "BackgroundFetchRegistration")] registration: JsValue,
) -> Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let settled = crate::client::settle_background_fetch(&registration).await?;
        Ok(settled.and_then(|s| crate::serde_js::to_js(&s).ok()).unwrap_or(JsValue::NULL))
    })
}
