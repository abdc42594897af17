//! Shared pieces of the browser tests: the reference server started by the
//! test command (its address and admin token are baked in at compile time),
//! files made in the page, and adapters that count or break requests.
#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use gloo_net::http::Request;
use serde_json::{Value, json};
use upload_once::client::{Adapters, Client, Options};
use upload_once::core::attempt::AttemptRecord;
use upload_once::core::retry::Failure;
use upload_once::core::wire::{
    AttemptResponse, AuthorizeRequest, ConfirmRequest, CreateEventResponse, Media, PartsRequest, PartsResponse,
    SessionResponse, StatusResponse, UploadInstruction,
};
use upload_once::env::sleep;
use upload_once::transport::{Api, HttpApi, LocalFuture, ProgressFn, Transport, XhrTransport};
use uuid::Uuid;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, File};

/// The reference server the test command started.
pub const API: &str = match option_env!("UPLOAD_ONCE_TEST_API") {
    Some(v) => v,
    None => "http://127.0.0.1:18181",
};
/// Its admin token.
pub const ADMIN: &str = match option_env!("UPLOAD_ONCE_TEST_ADMIN") {
    Some(v) => v,
    None => "browser-test-admin",
};

/// A fresh name, so tests never share an event or a database.
pub fn unique(prefix: &str) -> String {
    let id = upload_once::core::new_attempt_id(&mut upload_once::env::CryptoEntropy);
    format!("{prefix}-{}", &id.simple().to_string()[..12])
}

/// Creates an event on the reference server.
pub async fn create_event(max_file_bytes: u64, moderation: &str) -> CreateEventResponse {
    let body = json!({
        "slug": unique("ev"), "title": "Browser test", "max_file_bytes": max_file_bytes,
        "allowed_types": ["image/*", "video/*"], "moderation": moderation,
    });
    let response = Request::post(&format!("{API}/v1/events"))
        .header("Authorization", &format!("Bearer {ADMIN}"))
        .json(&body)
        .unwrap()
        .send()
        .await
        .expect("the reference server answers (started by `cargo xtask test`)");
    assert_eq!(response.status(), 201, "create event: {}", response.text().await.unwrap_or_default());
    response.json().await.unwrap()
}

/// The media records of an event, as its host sees them.
pub async fn host_media(event: &CreateEventResponse) -> Vec<Value> {
    let response = Request::get(&format!("{API}/v1/events/{}/media", event.event.slug))
        .header("Authorization", &format!("Bearer {}", event.host_token))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let v: Value = response.json().await.unwrap();
    v["media"].as_array().unwrap().clone()
}

/// A `File` made in the page.
pub fn file(name: &str, content_type: &str, size: usize, last_modified: f64) -> File {
    // The bytes begin with the name and the time: two files that differ in
    // either are two photos (the server keeps one media per content), while
    // the same file made twice has the same bytes.
    let mut bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let identity = format!("{name}\0{last_modified}");
    let n = identity.len().min(size);
    bytes[..n].copy_from_slice(&identity.as_bytes()[..n]);
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()));
    let options = web_sys::FilePropertyBag::new();
    options.set_type(content_type);
    options.set_last_modified(last_modified);
    File::new_with_u8_array_sequence_and_options(&parts, name, &options).unwrap()
}

/// A large `File` made in the page's JS heap (not wasm memory): each
/// 64 KiB block is filled with a byte drawn from `seed` and the block's
/// index, so two files with different seeds differ in every part.
pub fn big_file(name: &str, content_type: &str, size: usize, last_modified: f64, seed: u32) -> File {
    let bytes = js_sys::Uint8Array::new_with_length(size as u32);
    let block = 64 * 1024;
    for (i, start) in (0..size).step_by(block).enumerate() {
        let value = ((i as u32).wrapping_mul(31).wrapping_add(seed.wrapping_mul(97)) % 251) as u8;
        bytes.fill(value, start as u32, (start + block).min(size) as u32);
    }
    let parts = js_sys::Array::of1(&bytes);
    let options = web_sys::FilePropertyBag::new();
    options.set_type(content_type);
    options.set_last_modified(last_modified);
    File::new_with_u8_array_sequence_and_options(&parts, name, &options).unwrap()
}

/// Options for an event, with a database of its own and fast retries.
pub fn options(event: &CreateEventResponse, db: &str) -> Options {
    let mut o = Options::new(API, &event.event.slug, &event.guest_code);
    o.db_name = db.to_owned();
    o.retry.base_ms = 50;
    o.retry.cap_ms = 400;
    o
}

/// Counts what goes over the network, and can break it on purpose.
#[derive(Default)]
pub struct Faults {
    pub joins: Cell<u32>,
    /// While set, the next join waits until its sender is dropped or sends.
    pub hold_joins: RefCell<Option<futures_channel::oneshot::Receiver<()>>>,
    pub authorizes: Cell<u32>,
    pub puts: Cell<u32>,
    pub confirms: Cell<u32>,
    pub renews: Cell<u32>,
    pub statuses: Cell<u32>,
    pub part_signs: Cell<u32>,
    /// Drop the answer of this many confirms after the server committed.
    pub drop_confirm_answers: Cell<u32>,
    /// Hold this many PUTs for this long before sending them.
    pub delay_puts: Cell<u32>,
    pub delay_ms: Cell<f64>,
    /// Fail every request with a network error (the page is "offline").
    pub offline: Cell<bool>,
    /// Every PUT fails as if the connection dropped before it was sent.
    pub fail_puts: Cell<bool>,
    /// The last PUT's status code, for assertions.
    pub put_results: RefCell<Vec<Result<(), Failure>>>,
    /// Every part PUT that answered: (attempt, part number, stored).
    pub part_puts: RefCell<Vec<(Uuid, u32, bool)>>,
    /// When set, each authorize first reads its attempt from this IndexedDB
    /// database (a connection of its own) and records what was stored there
    /// at the moment the request left.
    pub inspect_db: RefCell<Option<String>>,
    /// What `inspect_db` found, one entry per authorize.
    pub stored_at_authorize: RefCell<Vec<Option<AttemptRecord>>>,
    /// Every authorize request, as sent.
    pub authorize_requests: RefCell<Vec<AuthorizeRequest>>,
}

/// An [`Api`] that counts and breaks requests around the real one.
pub struct FaultyApi {
    pub inner: HttpApi,
    pub faults: Rc<Faults>,
}

/// A [`Transport`] that counts and delays PUTs around the real XHR one.
pub struct FaultyTransport {
    pub inner: Rc<XhrTransport>,
    pub faults: Rc<Faults>,
}

fn bump(c: &Cell<u32>) {
    c.set(c.get() + 1);
}

impl Api for FaultyApi {
    fn join(&self, guest_code: &str) -> LocalFuture<Result<SessionResponse, Failure>> {
        bump(&self.faults.joins);
        let held = self.faults.hold_joins.borrow_mut().take();
        let call = self.inner.join(guest_code);
        Box::pin(async move {
            if let Some(gate) = held {
                let _ = gate.await;
            }
            call.await
        })
    }

    fn authorize(&self, session: &str, request: &AuthorizeRequest) -> LocalFuture<Result<AttemptResponse, Failure>> {
        bump(&self.faults.authorizes);
        self.faults.authorize_requests.borrow_mut().push(request.clone());
        if self.faults.offline.get() {
            return Box::pin(async { Err(Failure::Network) });
        }
        let Some(db) = self.faults.inspect_db.borrow().clone() else {
            return self.inner.authorize(session, request);
        };
        let (faults, id) = (self.faults.clone(), request.id);
        let call = self.inner.authorize(session, request);
        Box::pin(async move {
            let store =
                upload_once::store::IndexedDbStore::open(&db).await.map_err(JsValue::from).expect("IndexedDB opens");
            let stored = store.load_attempt(&id).await.map_err(JsValue::from).expect("the attempt store reads");
            store.close_connection();
            faults.stored_at_authorize.borrow_mut().push(stored);
            call.await
        })
    }

    fn renew(&self, session: &str, id: Uuid) -> LocalFuture<Result<AttemptResponse, Failure>> {
        bump(&self.faults.renews);
        self.inner.renew(session, id)
    }

    fn confirm(&self, session: &str, id: Uuid, request: &ConfirmRequest) -> LocalFuture<Result<Media, Failure>> {
        bump(&self.faults.confirms);
        let call = self.inner.confirm(session, id, request);
        let faults = self.faults.clone();
        Box::pin(async move {
            let result = call.await;
            if faults.drop_confirm_answers.get() > 0 {
                faults.drop_confirm_answers.set(faults.drop_confirm_answers.get() - 1);
                // The server committed; the answer is lost on the way back.
                return Err(Failure::Network);
            }
            result
        })
    }

    fn status(&self, session: &str, ids: &[Uuid]) -> LocalFuture<Result<StatusResponse, Failure>> {
        bump(&self.faults.statuses);
        if self.faults.offline.get() {
            return Box::pin(async { Err(Failure::Network) });
        }
        self.inner.status(session, ids)
    }

    fn sign_parts(
        &self,
        session: &str,
        id: Uuid,
        request: &PartsRequest,
    ) -> LocalFuture<Result<PartsResponse, Failure>> {
        bump(&self.faults.part_signs);
        if self.faults.offline.get() {
            return Box::pin(async { Err(Failure::Network) });
        }
        self.inner.sign_parts(session, id, request)
    }

    fn withdraw(&self, session: &str, id: Uuid) -> LocalFuture<Result<(), Failure>> {
        if self.faults.offline.get() {
            return Box::pin(async { Err(Failure::Network) });
        }
        self.inner.withdraw(session, id)
    }
}

impl Transport for FaultyTransport {
    fn put(
        &self,
        id: Uuid,
        part: Option<u32>,
        blob: &Blob,
        instruction: &UploadInstruction,
        progress: ProgressFn,
    ) -> LocalFuture<Result<(), Failure>> {
        bump(&self.faults.puts);
        let faults = self.faults.clone();
        let inner = self.inner.clone();
        let (blob, instruction) = (blob.clone(), instruction.clone());
        Box::pin(async move {
            if faults.fail_puts.get() {
                return Err(Failure::Network);
            }
            if faults.delay_puts.get() > 0 {
                faults.delay_puts.set(faults.delay_puts.get() - 1);
                sleep(faults.delay_ms.get()).await;
            }
            let result = inner.put(id, part, &blob, &instruction, progress).await;
            faults.put_results.borrow_mut().push(result.clone());
            if let Some(number) = part {
                faults.part_puts.borrow_mut().push((id, number, result.is_ok()));
            }
            result
        })
    }

    fn abort(&self, id: &Uuid) {
        self.inner.abort(id);
    }
}

impl Faults {
    /// The parts of attempt `id` this page stored (numbers, in order sent).
    pub fn parts_stored(&self, id: Uuid) -> Vec<u32> {
        self.part_puts.borrow().iter().filter(|(i, _, ok)| *i == id && *ok).map(|(_, n, _)| *n).collect()
    }
}

/// Adapters that count (and can break) every request.
pub fn faulty(options: &Options, faults: &Rc<Faults>) -> Adapters {
    Adapters {
        api: Rc::new(FaultyApi { inner: HttpApi::new(&options.api_base, &options.event), faults: faults.clone() }),
        transport: Rc::new(FaultyTransport { inner: Rc::new(XhrTransport::default()), faults: faults.clone() }),
    }
}

/// Waits until `done()` holds, or fails the test after `limit_ms`.
pub async fn wait_for(what: &str, limit_ms: f64, mut done: impl FnMut() -> bool) {
    // A bound on a hang, measured on the clock: a busy browser runs fewer
    // turns of this loop in the same time.
    let deadline = js_sys::Date::now() + limit_ms;
    while !done() {
        assert!(js_sys::Date::now() < deadline, "timed out waiting for: {what}");
        sleep(25.0).await;
    }
}

/// Waits until the client has nothing left to do.
pub async fn settle(client: &Client) {
    wait_for("the uploader to settle", 20_000.0, || client.is_idle()).await;
}

/// The single record of a client.
pub fn only_record(client: &Client) -> AttemptRecord {
    let records = client.records();
    assert_eq!(records.len(), 1, "exactly one attempt");
    records.into_iter().next().unwrap()
}

/// Whether this browser profile keeps a Blob in IndexedDB, asked through the
/// client's own store. Safari's private browsing (and the stock
/// WebKitWebDriver profile, which behaves like it) refuses: then a file lives
/// only as long as the page that picked it.
pub async fn blobs_can_be_kept() -> bool {
    let db = unique("blob-probe");
    let store = upload_once::store::IndexedDbStore::open(&db).await.map_err(JsValue::from).expect("IndexedDB opens");
    let key = Uuid::from_u128(1);
    let kept = store.put_blobs(&[(key, file("probe.png", "image/png", 1_000, 1.0).into())]).await.is_ok()
        && matches!(store.get_blob(&key).await, Ok(Some(_)));
    store.close_connection();
    kept
}

/// Opens a client with counting adapters.
pub async fn open(options: Options, faults: &Rc<Faults>) -> Client {
    let adapters = faulty(&options, faults);
    Client::open(options, adapters).await.map_err(JsValue::from).expect("open")
}

/// Where most tests start: an event on the reference server, a database of
/// the test's own, counters around the network, and options for that event
/// and database. A test changes the faults or the options before it opens
/// its first page.
pub struct Setup {
    pub event: CreateEventResponse,
    pub db: String,
    pub faults: Rc<Faults>,
    pub opts: Options,
}

impl Setup {
    /// Creates the event (see [`create_event`]) and names the database.
    pub async fn new(max_file_bytes: u64, moderation: &str) -> Self {
        let event = create_event(max_file_bytes, moderation).await;
        let db = unique("db");
        let opts = options(&event, &db);
        Setup { event, db, faults: Rc::new(Faults::default()), opts }
    }

    /// Opens a page with this set-up's options and faults.
    pub async fn open(&self) -> Client {
        open(self.opts.clone(), &self.faults).await
    }

    /// Another page over the same database, as after a reload or in another
    /// tab: the default [`options`] (fast retries, whatever `opts` became),
    /// counted by `faults`, with its stored attempts restored.
    pub async fn reload(&self, faults: &Rc<Faults>) -> Client {
        let page = open(options(&self.event, &self.db), faults).await;
        page.restore().await.unwrap();
        page
    }
}

/// A minute between tries: a page whose request failed waits instead of
/// retrying on its own while the test goes on.
pub fn slow_retries(opts: &mut Options) {
    opts.retry.base_ms = 60_000;
    opts.retry.cap_ms = 60_000;
}

/// Opens a first page that sends `file` (large enough to go up in parts)
/// and closes it once the server holds a few parts, with more on the wire:
/// a reload or a crash mid-transfer. The attempt's id, and the parts the
/// server held by then.
pub async fn cut_mid_transfer(setup: &Setup, file: &File) -> (Uuid, Vec<u32>) {
    let first = setup.open().await;
    first.add(vec![file.clone()]).await.unwrap();
    let id = only_record(&first).id;
    wait_for("three parts stored", 60_000.0, || setup.faults.parts_stored(id).len() >= 3).await;
    // The page goes away with parts on the wire.
    first.close();
    (id, setup.faults.parts_stored(id))
}

/// Opens `name` at a newer schema version, as a newer build of the app in
/// another tab would, and closes that connection once it is open.
pub async fn upgrade_from_another_page(name: &str) {
    let factory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into()).unwrap();
    let open: js_sys::Function = js_sys::Reflect::get(&factory, &"open".into()).unwrap().unchecked_into();
    let request = open.call2(&factory, &name.into(), &JsValue::from(upload_once::store::SCHEMA_VERSION + 1)).unwrap();
    let done = js_sys::Promise::new(&mut |resolve, reject| {
        js_sys::Reflect::set(&request, &"onsuccess".into(), &resolve).unwrap();
        js_sys::Reflect::set(&request, &"onerror".into(), &reject).unwrap();
    });
    wasm_bindgen_futures::JsFuture::from(done)
        .await
        .expect("the newer version opens: the uploader's connection made way");
    let db = js_sys::Reflect::get(&request, &"result".into()).unwrap();
    let close: js_sys::Function = js_sys::Reflect::get(&db, &"close".into()).unwrap().unchecked_into();
    close.call0(&db).unwrap();
}
