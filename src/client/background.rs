//! Uploads that outlive the tab: the page model's side of a hand-over to
//! a Background Fetch (Chromium). The browser's side (the fetch, its id,
//! the blobs, the service worker's settle) is a few lines of JS over these
//! and the `Uploader` methods (`handOverWith`, `takeBackWith`, `settleWith`
//! in `glue.js`): in wasm the same steps cost the package about 8 KiB
//! gzipped (docs/package-size.md).

use upload_once_core::wire::UploadInstruction;
use uuid::Uuid;

use super::Client;
use crate::env::now;

impl Client {
    /// Prepares a hand-over: the files not sent yet are hashed and
    /// authorized all at once (each needs its signed URL), and no new
    /// transfer starts. [`Client::hand_over_ready`] says when they answered.
    pub fn prepare_hand_over(&self) {
        self.page().prepare_hand_over();
        self.0.signal.raise();
    }

    /// Whether every file of a hand-over being prepared has its signed URL
    /// (or cannot get one now).
    pub fn hand_over_ready(&self) -> bool {
        !self.page().hand_over_waits()
    }

    /// Hands the transfers in one PUT to a Background Fetch: each is paused
    /// here, stored as handed over, then its lock let go (its view then says
    /// `inBackground`, and not `drivenHere`). Their ids and PUTs.
    pub fn hand_over(&self) -> Vec<(Uuid, UploadInstruction)> {
        let (ids, _stored) = self.page().hand_over(now());
        self.0.signal.raise();
        let page = self.page();
        ids.iter().filter_map(|id| Some((*id, page.record(id)?.upload.clone()?))).collect()
    }

    /// Takes back the attempts handed to a Background Fetch (those of
    /// `only`, when given): they go on here from what the server says.
    pub fn take_back(&self, only: Option<&[Uuid]>) -> Vec<Uuid> {
        let ids = self.page().take_back(only, now());
        self.0.signal.raise();
        ids
    }

    /// Who a hand-over belongs to: `[dbName, apiBase, event, guestCode]`
    /// (the service worker opens the same uploader from them).
    pub fn owner(&self) -> [&str; 4] {
        let o = &self.0.options;
        [&o.db_name, &o.api_base, &o.event, &o.guest_code]
    }
}
