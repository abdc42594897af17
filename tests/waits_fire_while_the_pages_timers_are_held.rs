//! A hidden page's timers are throttled (Chromium: one wake-up a second,
//! one a minute after five minutes hidden), and the driver waits on timers
//! for backoff, renewal and polling. So each wait is also armed in a
//! dedicated worker, whose timers are not throttled. Here the page's
//! `setTimeout` is held outright (it records the call and never fires, the
//! limit of throttling): a confirm whose answer was lost is still retried
//! after its backoff and confirmed, woken by the worker alone.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::cell::Cell;
use std::rc::Rc;

use common::*;
use js_sys::{Function, Promise, Reflect};
use upload_once::core::attempt::Confirmation;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

/// The page's `setTimeout` replaced by one that never fires, put back when
/// dropped (a failing assertion included).
struct HeldPageTimers {
    original: JsValue,
    held: Rc<Cell<u32>>,
    _hold: Closure<dyn FnMut() -> f64>,
}

impl HeldPageTimers {
    fn hold() -> Self {
        let global = js_sys::global();
        let original = Reflect::get(&global, &"setTimeout".into()).unwrap();
        let held = Rc::new(Cell::new(0));
        let counter = held.clone();
        let hold = Closure::<dyn FnMut() -> f64>::new(move || {
            counter.set(counter.get() + 1);
            0.0
        });
        Reflect::set(&global, &"setTimeout".into(), hold.as_ref()).unwrap();
        HeldPageTimers { original, held, _hold: hold }
    }

    /// Sleeps on the page's own timer, which the hold does not reach.
    async fn sleep_on_the_real_timer(&self, ms: f64) {
        let original: Function = self.original.clone().unchecked_into();
        let promise = Promise::new(&mut |resolve, _| {
            original.call2(&JsValue::UNDEFINED, &resolve, &ms.into()).unwrap();
        });
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
}

impl Drop for HeldPageTimers {
    fn drop(&mut self) {
        Reflect::set(&js_sys::global(), &"setTimeout".into(), &self.original).unwrap();
    }
}

#[wasm_bindgen_test]
async fn a_retry_is_woken_by_the_worker_when_the_pages_timers_never_fire() {
    assert!(upload_once::env::wakes_in_worker(), "a page arms its waits in a worker too");
    let mut setup = Setup::new(1_000_000, "none").await;
    // The retry after the lost answer waits 300 ms on a timer.
    setup.opts.retry.base_ms = 300;
    setup.opts.retry.cap_ms = 300;
    let client = setup.open().await;
    setup.faults.drop_confirm_answers.set(1);

    let page_timers = HeldPageTimers::hold();
    client.add(vec![file("late.png", "image/png", 4_000, 1.0)]).await.map_err(JsValue::from).unwrap();
    // Bounded on the real timer: with the page's timers alone the retry
    // would never come.
    let deadline = js_sys::Date::now() + 15_000.0;
    while !(client.is_idle() && setup.faults.confirms.get() >= 2) && js_sys::Date::now() < deadline {
        page_timers.sleep_on_the_real_timer(25.0).await;
    }
    let held = page_timers.held.get();
    drop(page_timers);

    assert_eq!(setup.faults.drop_confirm_answers.get(), 0, "the first confirm's answer was lost");
    assert!(held > 0, "the driver asked the page for a timer (and got none)");
    assert_eq!(setup.faults.confirms.get(), 2, "the confirm was sent again after its backoff");
    let record = only_record(&client);
    assert_eq!(record.confirmation, Confirmation::Confirmed);
    assert_eq!(host_media(&setup.event).await.len(), 1);
    client.close();
}
