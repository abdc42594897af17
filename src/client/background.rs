//! Uploads that outlive the tab: the transfers a page hands to a
//! Background Fetch (Chromium), and the service worker's side, which
//! confirms them when the fetch ends.
//!
//! - [`Client::hand_over`]: the page's transfers in one PUT, with their
//!   signed URL in hand, are paused here and marked `background` (stored
//!   strictly), their locks are let go, and one Background Fetch sends
//!   their bytes (the same PUTs, with the same headers). Its id carries what
//!   the service worker needs to open the same uploader ([`HandOver`]).
//! - [`settle`] (the service worker, `settleBackgroundFetch`): when the
//!   fetch ends, the uploader opens there, restores only those attempts and
//!   asks the server what became of each; a stored object is confirmed with
//!   the same idempotent confirm. A fetch the guest cancelled in the
//!   browser's download UI cancels the attempts still handed over.
//! - [`Client::take_back`]: a page that comes back takes every hand-over
//!   back: it marks each fetch as taken back (so its abort is not read as
//!   the guest's cancel), aborts it, and drives the attempts again from
//!   what the server says.

use js_sys::{Array, Object, Promise, Reflect};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use upload_once_core::page::Page;
use upload_once_core::view::BackgroundFetchSettled as Settled;

use super::{Adapters, Client, Options};
use crate::env::now;
use crate::error::{Error, Result};
use crate::serde_js::{from_js, to_js};

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = hasBackgroundFetch)]
    fn has_background_fetch(registration: &JsValue) -> bool;
    #[wasm_bindgen(js_name = startBackgroundFetch)]
    fn start_background_fetch(registration: &JsValue, id: &str, puts: &Array, title: &str) -> Promise;
    #[wasm_bindgen(js_name = backgroundFetchIds)]
    fn background_fetch_ids(registration: &JsValue) -> Promise;
    #[wasm_bindgen(js_name = abortBackgroundFetch)]
    fn abort_background_fetch(registration: &JsValue, id: &str) -> Promise;
}

/// What a Background Fetch's id carries: the uploader it came from and
/// the attempts whose bytes it sends (in the order of its requests).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HandOver {
    /// Always 1: an id of upload-once's.
    #[serde(rename = "uploadOnce")]
    pub upload_once: u32,
    /// The IndexedDB database.
    pub db: String,
    /// The API base.
    pub api: String,
    /// The event slug.
    pub event: String,
    /// The guest code (the uploader's options need it; the stored session
    /// is used).
    pub code: String,
    /// The attempts handed over.
    pub ids: Vec<Uuid>,
    /// Makes the id unique.
    pub n: Uuid,
}

impl HandOver {
    /// The Background Fetch id that carries it.
    fn id(&self) -> Result<String> {
        let value = to_js(self).map_err(Error::InvalidOptions)?;
        js_sys::JSON::stringify(&value)
            .ok()
            .and_then(|s| s.as_string())
            .ok_or_else(|| Error::InvalidOptions("the hand-over could not be written".into()))
    }

    /// Reads a Background Fetch id; `None` for one that is not ours.
    pub fn parse(id: &str) -> Option<HandOver> {
        let value = js_sys::JSON::parse(id).ok()?;
        from_js::<HandOver>(value).ok().filter(|h| h.upload_once == 1)
    }

    fn is_for(&self, options: &Options) -> bool {
        self.db == options.db_name && self.event == options.event && self.api == options.api_base
    }
}

/// Where the page notes that it took a fetch back (its abort is not the
/// guest's cancel).
fn taken_back_key(fetch_id: &str) -> String {
    format!("taken-back:{fetch_id}")
}

impl Client {
    /// Hands this page's transfers in one PUT to a Background Fetch of
    /// `registration` (the page's service worker), titled `title` in the
    /// browser's download UI. The ids handed over: none where the browser
    /// has no Background Fetch, or nothing is left to send in one PUT. If
    /// the browser refuses the fetch, they go on here.
    pub async fn hand_over(&self, registration: &JsValue, title: &str) -> Result<Vec<Uuid>> {
        if self.page().is_closed() {
            return Err(Error::Closed);
        }
        if !has_background_fetch(registration) {
            return Ok(Vec::new());
        }
        // Every file's signed URL first (they are authorized at once).
        self.page().prepare_hand_over();
        self.0.signal.raise();
        self.until(|page| !page.hand_over_waits(), now() + PREPARE_LIMIT_MS).await;
        let (ids, ticket) = self.page().hand_over(now());
        self.ticket_result(ticket).await?;
        if ids.is_empty() {
            return Ok(ids);
        }
        let puts = Array::new();
        let mut sent = Vec::new();
        for id in &ids {
            let Some(upload) = self.page().record(id).and_then(|r| r.upload.clone()) else { continue };
            let Some(blob) = self.blob_for(id).await else { continue };
            let headers = Object::new();
            for (name, value) in &upload.headers {
                let _ = Reflect::set(&headers, &name.into(), &value.into());
            }
            let put = Object::new();
            let _ = Reflect::set(&put, &"url".into(), &upload.url.into());
            let _ = Reflect::set(&put, &"method".into(), &upload.method.into());
            let _ = Reflect::set(&put, &"headers".into(), &headers);
            let _ = Reflect::set(&put, &"body".into(), &blob);
            puts.push(&put);
            sent.push(*id);
        }
        let options = &self.0.options;
        let hand_over = HandOver {
            upload_once: 1,
            db: options.db_name.clone(),
            api: options.api_base.clone(),
            event: options.event.clone(),
            code: options.guest_code.clone(),
            ids: sent.clone(),
            n: upload_once_core::new_attempt_id(&mut crate::env::CryptoEntropy),
        };
        let started = JsFuture::from(start_background_fetch(registration, &hand_over.id()?, &puts, title)).await;
        if let Err(e) = started {
            web_sys::console::warn_2(&"upload-once: the browser refused the Background Fetch:".into(), &e);
            self.page().take_back(Some(&ids), now());
            self.0.signal.raise();
            return Ok(Vec::new());
        }
        // One without its bytes here (none should be) is taken back.
        let unsent: Vec<Uuid> = ids.iter().filter(|id| !sent.contains(id)).copied().collect();
        if !unsent.is_empty() {
            self.page().take_back(Some(&unsent), now());
            self.0.signal.raise();
        }
        Ok(sent)
    }

    /// Takes back every transfer of this uploader handed to a Background
    /// Fetch: each of its fetches still running is noted as taken back and
    /// aborted, and the attempts are driven here again from what the server
    /// says. The ids taken back.
    pub async fn take_back(&self, registration: &JsValue) -> Result<Vec<Uuid>> {
        if self.page().is_closed() {
            return Err(Error::Closed);
        }
        if has_background_fetch(registration) {
            let ids = JsFuture::from(background_fetch_ids(registration)).await.unwrap_or_default();
            for fetch_id in Array::from(&ids).iter().filter_map(|v| v.as_string()) {
                if !HandOver::parse(&fetch_id).is_some_and(|h| h.is_for(&self.0.options)) {
                    continue;
                }
                self.0.store.put_meta(&taken_back_key(&fetch_id), &JsValue::TRUE).await?;
                let _ = JsFuture::from(abort_background_fetch(registration, &fetch_id)).await;
            }
        }
        let ids = self.page().take_back(None, now());
        self.0.signal.raise();
        Ok(ids)
    }
}

/// How long a hand-over waits for the files' signed URLs.
const PREPARE_LIMIT_MS: i64 = 10_000;

/// How long a settle may wait for its attempts (an event's `waitUntil` is
/// not kept alive for ever).
const SETTLE_LIMIT_MS: i64 = 60_000;

/// In the service worker: settles the Background Fetch `registration`
/// (a `BackgroundFetchRegistration` that ended) started by
/// [`Client::hand_over`]. `None` for a fetch that is not ours or still
/// runs, or one a page took back.
pub async fn settle(registration: &JsValue) -> Result<Option<Settled>> {
    let text =
        |name: &str| Reflect::get(registration, &name.into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
    let fetch_id = text("id");
    let Some(hand_over) = HandOver::parse(&fetch_id) else {
        return Ok(None);
    };
    if text("result").is_empty() {
        return Ok(None);
    }
    let mut options = Options::new(&hand_over.api, &hand_over.event, &hand_over.code);
    options.db_name = hand_over.db.clone();
    let adapters = Adapters::browser(&options);
    let client = Client::open(options, adapters).await?;
    let aborted = text("failureReason") == "aborted";
    if aborted && client.0.store.get_meta(&taken_back_key(&fetch_id)).await?.is_some() {
        client.close();
        return Ok(None);
    }
    client.restore_only(&hand_over.ids).await?;
    if aborted {
        // The guest cancelled it in the browser's download UI: a cancel
        // there is a cancel here, for what is still handed over.
        for id in &hand_over.ids {
            if client.page().record(id).is_some_and(|r| r.background && !r.is_terminal()) {
                let _ = client.cancel(id);
            }
        }
    }
    client.until(Page::is_idle, now() + SETTLE_LIMIT_MS).await;
    let mut settled = Settled { total: hand_over.ids.len() as u32, ..Settled::default() };
    for id in &hand_over.ids {
        let page = client.page();
        let Some(record) = page.record(id) else { continue };
        if record.confirmation == upload_once_core::attempt::Confirmation::Confirmed {
            settled.confirmed += 1;
        } else if record.error.as_ref().is_some_and(|e| e.code == upload_once_core::ErrorCode::Cancelled.as_str()) {
            settled.cancelled += 1;
        } else {
            settled.waiting += 1;
        }
    }
    client.close();
    Ok(Some(settled))
}
