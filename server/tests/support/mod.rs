//! Shared harness of the server tests: a real server on a loopback port,
//! with a manual clock, and a small typed client.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Client, Method, Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use upload_once_core::wire::{AttemptResponse, CreateEventResponse, Media, UploadInstruction};
use upload_once_server::clock::{Clock, ManualClock};
use upload_once_server::config::Config;
use upload_once_server::state::AppState;
use upload_once_server::storage::{ObjectBody, ObjectMeta, ObjectStore, PutGrant};
use upload_once_server::{Result, build_state, routes};
use uuid::Uuid;

pub const ADMIN: &str = "test-admin-token";

/// A running server.
pub struct TestServer {
    pub base: String,
    pub state: AppState,
    pub clock: Arc<ManualClock>,
    pub http: Client,
    _dir: TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Options for a test server.
#[derive(Default)]
pub struct Options {
    pub allowed_origins: Vec<String>,
    pub url_ttl: Option<Duration>,
    pub attempt_ttl: Option<Duration>,
    pub session_ttl: Option<Duration>,
    /// Wraps the object store (fault injection).
    pub wrap_objects: Option<Box<dyn FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> + Send>>,
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut config = Config::defaults();
        config.listen = addr;
        config.data_dir = dir.path().to_owned();
        config.admin_token = Some(ADMIN.to_owned());
        config.allowed_origins = options.allowed_origins;
        config.www_dir = Some(dir.path().join("no-www"));
        config.pkg_dir = Some(dir.path().join("no-pkg"));
        if let Some(ttl) = options.url_ttl {
            config.url_ttl = ttl;
        }
        if let Some(ttl) = options.attempt_ttl {
            config.attempt_ttl = ttl;
        }
        if let Some(ttl) = options.session_ttl {
            config.session_ttl = ttl;
        }
        if let Ok(url) = std::env::var("UPLOAD_ONCE_TEST_DATABASE_URL") {
            config.database_url = Some(url);
        }
        let clock = Arc::new(ManualClock::new(now_ms()));
        let mut state = build_state(config, clock.clone() as Arc<dyn Clock>).await.expect("state");
        if let Some(wrap) = options.wrap_objects {
            state.objects = wrap(state.objects.clone());
        }
        let app = routes::app(state.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        TestServer {
            base: format!("http://{addr}"),
            state,
            clock,
            http: Client::builder().pool_max_idle_per_host(64).build().unwrap(),
            _dir: dir,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Any request with an optional bearer and JSON body.
    pub async fn call(&self, method: Method, path: &str, bearer: Option<&str>, body: Option<Value>) -> Response {
        let mut req = self.http.request(method, self.url(path));
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        req.send().await.unwrap()
    }

    pub async fn create_event(&self, slug: &str, max: u64, types: &[&str], moderation: &str) -> CreateEventResponse {
        let r = self
            .call(
                Method::POST,
                "/v1/events",
                Some(ADMIN),
                Some(json!({"slug": slug, "title": format!("Event {slug}"), "max_file_bytes": max, "allowed_types": types, "moderation": moderation})),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED, "create event");
        r.json().await.unwrap()
    }

    pub async fn join(&self, event: &CreateEventResponse) -> String {
        let r = self
            .call(
                Method::POST,
                &format!("/v1/events/{}/sessions", event.event.slug),
                None,
                Some(json!({"guest_code": event.guest_code})),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED, "join");
        let v: Value = r.json().await.unwrap();
        v["session_token"].as_str().unwrap().to_owned()
    }

    /// A fresh event (moderation required, 1 MB, images) and a guest session.
    pub async fn guest(&self) -> Guest<'_> {
        let slug = format!("ev-{}", &Uuid::new_v4().simple().to_string()[..12]);
        let event = self.create_event(&slug, 1_000_000, &["image/*", "video/mp4"], "required").await;
        let session = self.join(&event).await;
        Guest { server: self, event, session }
    }

    /// A guest of an existing event (a fresh session).
    pub async fn guest_of(&self, event: &CreateEventResponse) -> Guest<'_> {
        let session = self.join(event).await;
        Guest { server: self, event: event.clone(), session }
    }

    /// The embedded object store.
    pub fn local(&self) -> &upload_once_server::storage::local::LocalObjectStore {
        self.state.objects.as_local().expect("the test server stores objects itself")
    }

    /// Every stored object key.
    pub async fn stored_keys(&self) -> Vec<String> {
        self.local().list_keys().await.unwrap()
    }

    /// Files left in the object store's temporary directory.
    pub fn temp_files(&self) -> Vec<String> {
        std::fs::read_dir(self.state.config.data_dir.join("objects").join(".tmp"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    pub async fn put(&self, upload: &UploadInstruction, body: Vec<u8>) -> Response {
        let mut req = self.http.put(&upload.url).body(body);
        for (k, v) in &upload.headers {
            req = req.header(k, v);
        }
        req.send().await.unwrap()
    }

    pub async fn counts(&self) -> (u64, u64) {
        self.state.records.counts().await.unwrap()
    }

    pub async fn sweep(&self) {
        upload_once_server::sweeper::sweep_once(&self.state).await.unwrap();
    }
}

/// A guest of one event.
pub struct Guest<'a> {
    pub server: &'a TestServer,
    pub event: CreateEventResponse,
    pub session: String,
}

impl Guest<'_> {
    pub fn slug(&self) -> &str {
        &self.event.event.slug
    }

    pub async fn authorize_raw(&self, body: Value) -> Response {
        self.server
            .call(Method::POST, &format!("/v1/events/{}/attempts", self.slug()), Some(&self.session), Some(body))
            .await
    }

    /// Authorizes a PNG of `size` bytes.
    pub async fn authorize(&self, id: Uuid, size: u64) -> AttemptResponse {
        let r = self.authorize_raw(json!({"id": id, "filename": "photo.png", "size": size, "content_type": "image/png"})).await;
        assert!(r.status().is_success(), "authorize: {}", r.status());
        r.json().await.unwrap()
    }

    pub async fn confirm_raw(&self, id: Uuid, body: Value) -> Response {
        self.server
            .http
            .post(self.server.url(&format!("/v1/attempts/{id}/confirm")))
            .bearer_auth(&self.session)
            .header("Idempotency-Key", id.to_string())
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    pub async fn confirm(&self, id: Uuid, size: u64) -> Response {
        self.confirm_raw(id, json!({"size": size, "content_type": "image/png"})).await
    }

    /// authorize + PUT + confirm.
    pub async fn upload(&self, bytes: Vec<u8>) -> (Uuid, Media) {
        let id = Uuid::new_v4();
        let a = self.authorize(id, bytes.len() as u64).await;
        let len = bytes.len() as u64;
        assert_eq!(self.server.put(a.upload.as_ref().unwrap(), bytes).await.status(), StatusCode::OK);
        let r = self.confirm(id, len).await;
        assert_eq!(r.status(), StatusCode::OK);
        (id, r.json().await.unwrap())
    }

    /// `GET /v1/attempts/{id}`.
    pub async fn get(&self, id: Uuid) -> Response {
        self.server.call(Method::GET, &format!("/v1/attempts/{id}"), Some(&self.session), None).await
    }

    /// `POST /v1/attempts/{id}/renew`.
    pub async fn renew(&self, id: Uuid) -> Response {
        self.server.call(Method::POST, &format!("/v1/attempts/{id}/renew"), Some(&self.session), None).await
    }

    pub async fn status(&self, ids: &[Uuid]) -> Value {
        let r = self.server.call(Method::POST, "/v1/attempts/status", Some(&self.session), Some(json!({"ids": ids}))).await;
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.unwrap()
    }
}

/// Reads a problem body, checking its content type.
pub async fn problem(r: Response) -> (StatusCode, Value) {
    let status = r.status();
    let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    assert_eq!(ct, "application/problem+json", "status {status}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"].as_u64(), Some(u64::from(status.as_u16())));
    assert!(v["code"].is_string() && v["type"].is_string() && v["title"].is_string());
    (status, v)
}

/// An object store wrapper whose `head` waits until released: holds a
/// confirm inside its transaction.
pub struct GatedObjects {
    pub inner: Arc<dyn ObjectStore>,
    pub entered: Arc<tokio::sync::Notify>,
    pub release: Arc<tokio::sync::Semaphore>,
}

#[async_trait]
impl ObjectStore for GatedObjects {
    fn presign_put(&self, grant: &PutGrant<'_>) -> upload_once_core::wire::UploadInstruction {
        self.inner.presign_put(grant)
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>> {
        self.entered.notify_one();
        let permit = self.release.acquire().await.unwrap();
        permit.forget();
        self.inner.head(key).await
    }
    async fn get(&self, key: &str) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key).await
    }
    fn as_local(&self) -> Option<&upload_once_server::storage::local::LocalObjectStore> {
        self.inner.as_local()
    }
}
