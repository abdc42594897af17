//! Several tabs, one driver per attempt: a Web Lock per attempt decides
//! which page uploads it, and a BroadcastChannel tells the other pages that
//! a record changed. Where Web Locks are missing, every lock is granted at
//! once (single-tab behaviour).

use std::rc::Rc;

use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{BroadcastChannel, MessageEvent};

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = locksAvailable)]
    fn locks_available() -> bool;
    #[wasm_bindgen(js_name = requestLock)]
    fn request_lock(name: &str, on_state: &js_sys::Function) -> JsValue;
}

/// A requested or held lock; `release()` gives it up.
pub struct LockHandle {
    handle: Option<JsValue>,
    _callback: Option<Closure<dyn FnMut(bool)>>,
}

impl LockHandle {
    /// A handle for no lock (a placeholder until the request is made).
    pub fn none() -> LockHandle {
        LockHandle { handle: None, _callback: None }
    }

    /// Gives the lock up (or withdraws the request).
    pub fn release(self) {
        if let Some(handle) = &self.handle {
            if let Ok(release) = js_sys::Reflect::get(handle, &"release".into()) {
                if let Some(f) = release.dyn_ref::<js_sys::Function>() {
                    let _ = f.call0(handle);
                }
            }
        }
    }
}

/// Whether this browser has Web Locks.
pub fn have_locks() -> bool {
    locks_available()
}

/// Asks for the lock of attempt `id` in database `db`. `on_state(true)`
/// runs once this page holds it; `on_state(false)` when another page holds
/// it (the request then waits in line).
pub fn lock_attempt(db: &str, id: &Uuid, on_state: impl FnMut(bool) + 'static) -> LockHandle {
    let mut on_state = on_state;
    if !locks_available() {
        on_state(true);
        return LockHandle { handle: None, _callback: None };
    }
    let callback = Closure::<dyn FnMut(bool)>::new(on_state);
    let handle = request_lock(&format!("upload-once:{db}:{id}"), callback.as_ref().unchecked_ref());
    LockHandle { handle: Some(handle), _callback: Some(callback) }
}

/// The channel on which pages announce changed records.
pub struct Channel {
    channel: Option<BroadcastChannel>,
    _listener: Option<Closure<dyn FnMut(MessageEvent)>>,
}

impl Channel {
    /// Joins the channel of database `db`; `on_change` runs with the id of
    /// every record another page changed.
    pub fn open(db: &str, on_change: Rc<dyn Fn(Uuid)>) -> Channel {
        let Ok(channel) = BroadcastChannel::new(&format!("upload-once:{db}")) else {
            return Channel { channel: None, _listener: None };
        };
        let listener = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            if let Some(id) = e.data().as_string().and_then(|s| Uuid::try_parse(&s).ok()) {
                on_change(id);
            }
        });
        channel.set_onmessage(Some(listener.as_ref().unchecked_ref()));
        Channel { channel: Some(channel), _listener: Some(listener) }
    }

    /// Tells the other pages that record `id` changed.
    pub fn announce(&self, id: &Uuid) {
        if let Some(c) = &self.channel {
            let _ = c.post_message(&JsValue::from_str(&id.to_string()));
        }
    }

    /// Leaves the channel.
    pub fn close(&self) {
        if let Some(c) = &self.channel {
            c.set_onmessage(None);
            c.close();
        }
    }
}
