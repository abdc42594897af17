//! The app's listeners (`onChange`, `onRemove`, `onStorageError`,
//! `onSessionChange`, `onBusyChange`).

use js_sys::Function;
use uuid::Uuid;
use wasm_bindgen::prelude::*;

use super::Client;

/// The app's listeners, each with an id to unsubscribe it.
#[derive(Default)]
pub(super) struct Listeners {
    pub(super) next: u32,
    pub(super) change: Vec<(u32, Function)>,
    pub(super) remove: Vec<(u32, Function)>,
    pub(super) storage: Vec<(u32, Function)>,
    pub(super) session: Vec<(u32, Function)>,
    pub(super) busy: Vec<(u32, Function)>,
}

/// Which listener list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenerKind {
    /// `onChange`.
    Change,
    /// `onRemove`.
    Remove,
    /// `onStorageError`.
    Storage,
    /// `onSessionChange`.
    Session,
    /// `onBusyChange`.
    Busy,
}

impl Listeners {
    pub(super) fn list(&mut self, kind: ListenerKind) -> &mut Vec<(u32, Function)> {
        match kind {
            ListenerKind::Change => &mut self.change,
            ListenerKind::Remove => &mut self.remove,
            ListenerKind::Storage => &mut self.storage,
            ListenerKind::Session => &mut self.session,
            ListenerKind::Busy => &mut self.busy,
        }
    }
}

impl Client {
    /// Subscribes a listener; the id unsubscribes it ([`Client::unsubscribe`]).
    pub fn subscribe(&self, kind: ListenerKind, listener: Function) -> u32 {
        let mut listeners = self.0.listeners.borrow_mut();
        listeners.next += 1;
        let id = listeners.next;
        listeners.list(kind).push((id, listener));
        id
    }

    /// Removes a listener (again: nothing happens).
    pub fn unsubscribe(&self, kind: ListenerKind, id: u32) {
        self.0.listeners.borrow_mut().list(kind).retain(|(i, _)| *i != id);
    }

    pub(super) fn call(&self, kind: ListenerKind, value: &JsValue) {
        let listeners: Vec<Function> =
            self.0.listeners.borrow_mut().list(kind).iter().map(|(_, f)| f.clone()).collect();
        for listener in listeners {
            let _ = listener.call1(&JsValue::NULL, value);
        }
    }

    pub(super) fn notify(&self, id: &Uuid) {
        if self.0.listeners.borrow().change.is_empty() {
            return;
        }
        if let Some(view) = self.view_js(id) {
            self.call(ListenerKind::Change, &view);
        }
    }
}
