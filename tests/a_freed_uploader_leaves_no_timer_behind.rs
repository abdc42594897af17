//! An uploader that is closed and dropped while it waits on a timer (a
//! retry's backoff) takes the timer with it: the browser does not call back
//! into a freed closure later, which would throw an uncaught error ("closure
//! invoked recursively or after being dropped") into the app's page or
//! worker, where error reporting would pick it up.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::Cell;
use std::rc::Rc;

use common::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn a_retry_timer_never_fires_into_a_freed_uploader() {
    let errors = Rc::new(Cell::new(0u32));
    let on_error = {
        let errors = errors.clone();
        Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            let message = js_sys::Reflect::get(&e, &"message".into()).ok().and_then(|m| m.as_string());
            web_sys::console::log_1(&format!("uncaught: {message:?}").into());
            errors.set(errors.get() + 1);
        })
    };
    let global: web_sys::EventTarget = js_sys::global().unchecked_into();
    global.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref()).unwrap();

    let mut setup = Setup::new(1_000_000, "none").await;
    setup.faults.offline.set(true);
    // The retry after the first failed try is due within 300 ms.
    setup.opts.retry.base_ms = 300;
    setup.opts.retry.cap_ms = 300;
    let client = setup.open().await;
    client.add(vec![file("cake.jpg", "image/jpeg", 20_000, 1.0)]).await.unwrap();
    wait_for("a try that failed", 10_000.0, || setup.faults.authorizes.get() >= 1).await;
    client.close();
    drop(client);
    // Past the retry's time (the timer the uploader waited on was due then).
    upload_once::env::sleep(1_000.0).await;

    global.remove_event_listener_with_callback("error", on_error.as_ref().unchecked_ref()).unwrap();
    assert_eq!(errors.get(), 0, "an uncaught error after the uploader was freed");
}
