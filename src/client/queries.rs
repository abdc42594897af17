//! What the app reads of the uploader: views, records, errors, the
//! session.

use upload_once_core::attempt::AttemptRecord;
use upload_once_core::view::{AttemptView, ErrorInfo};
use upload_once_core::wire::EventInfo;
use uuid::Uuid;
use wasm_bindgen::prelude::*;

use super::Client;
use crate::serde_js::to_js;

impl Client {
    /// Why attempt records cannot be saved in IndexedDB right now (quota,
    /// storage gone, another page upgraded the database); `None` once a save
    /// works again. While it lasts, the attempts whose records wait wait too.
    pub fn storage_error(&self) -> Option<ErrorInfo> {
        self.page().storage_error().map(|e| ErrorInfo { code: e.code.as_str().into(), message: e.message.clone() })
    }

    /// How many writes of attempt records failed in a row (0 once one
    /// works); with [`Client::storage_error`], for diagnostics.
    pub fn failed_writes(&self) -> u32 {
        self.page().failed_writes()
    }

    /// Why the server refused to open a guest session (a wrong guest code,
    /// no such event), until a join works.
    pub fn session_error(&self) -> Option<ErrorInfo> {
        self.0
            .page
            .borrow()
            .session_error()
            .map(|e| ErrorInfo { code: e.code.as_str().into(), message: e.message.clone() })
    }

    /// One attempt's view.
    pub fn view(&self, id: &Uuid) -> Option<AttemptView> {
        self.0.page.borrow().view(id)
    }

    /// One attempt's view, as JS sees it.
    pub fn view_js(&self, id: &Uuid) -> Option<JsValue> {
        self.view(id).and_then(|v| to_js(&v).ok())
    }

    /// Every attempt's view, oldest first.
    pub fn views(&self) -> Vec<AttemptView> {
        self.0.page.borrow().views()
    }

    /// One attempt's record.
    pub fn record(&self, id: &Uuid) -> Option<AttemptRecord> {
        self.0.page.borrow().record(id).cloned()
    }

    /// Every record, oldest first.
    pub fn records(&self) -> Vec<AttemptRecord> {
        self.0.page.borrow().records().cloned().collect()
    }

    /// Whether every attempt this page drives is finished (or waits for the
    /// guest), with nothing in flight and nothing left to store.
    pub fn is_idle(&self) -> bool {
        self.0.inputs.borrow().is_empty() && self.0.page.borrow().is_idle()
    }

    /// Whether this page drives an upload that goes on without the guest
    /// (`Uploader.busy`, see [`upload_once_core::page::Page::is_busy`]).
    pub fn is_busy(&self) -> bool {
        self.0.page.borrow().is_busy()
    }

    /// The answer of `navigator.storage.persist()`, once known.
    pub fn persisted(&self) -> Option<bool> {
        self.0.persisted.get()
    }

    /// The event, once a session exists.
    pub fn event(&self) -> Option<EventInfo> {
        self.0.page.borrow().session().map(|s| s.event.clone())
    }

    /// Whether a session token is held.
    pub fn has_session(&self) -> bool {
        self.0.page.borrow().session().is_some()
    }
}
