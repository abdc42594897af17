//! Shared harness of the server tests: a real server on a loopback port,
//! with a manual clock, and a small typed client.
//!
//! The backends come from the environment, so the whole suite runs against
//! every combination (`cargo xtask test server` sets these):
//!
//! | variable | effect |
//! | --- | --- |
//! | `UPLOAD_ONCE_TEST_PG_ADMIN_URL` | PostgreSQL: each test server gets a database of its own, created through this admin URL |
//! | `UPLOAD_ONCE_TEST_DATABASE_URL` | one database URL for every test server (only without the admin URL) |
//! | `UPLOAD_ONCE_TEST_STORAGE=s3` | S3 storage at `UPLOAD_ONCE_TEST_S3_ENDPOINT`, a bucket of its own per test server; keys in `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` |
//! | `UPLOAD_ONCE_TEST_S3_SERVER_BIN` | the test S3 server binary, for tests that start and stop a store of their own |
//! | `UPLOAD_ONCE_TEST_S3_FLAVOUR=moto` | the S3 endpoint is moto's server, which makes fewer checks of its own: what needs them is skipped, and says so ([`store_lacks`]) |
#![allow(dead_code)]

pub mod dedup;
pub mod limits;
pub mod media;
pub mod multipart;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Client, Method, Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use upload_once_core::time::UnixMillis;
use upload_once_core::wire::{AttemptResponse, CreateEventResponse, Media, UploadInstruction};
use upload_once_core::wire::{Moderation, ModerationDecision};
use upload_once_server::clock::{Clock, ManualClock};
use upload_once_server::config::{Config, Secret, StorageKind};
use upload_once_server::state::AppState;
use upload_once_server::storage::intercept::{Call, Intercepted, Interceptor, Operation};
use upload_once_server::storage::{ObjectStore, PutGrant};
use upload_once_server::store::{
    AttemptLock, AttemptRow, BulkModeration, EventRow, GuestRemoval, HostDecision, IndexEntry, MediaCounts,
    MediaListing, MediaRow, NewAttempt, PartDigest, RecordStore, SessionRow, SweepBacklog,
};
use upload_once_server::{Result, build_state};
use uuid::Uuid;

pub const ADMIN: &str = "test-admin-token";

/// Whether the tests run against S3 storage.
pub fn is_s3() -> bool {
    std::env::var("UPLOAD_ONCE_TEST_STORAGE").is_ok_and(|s| s == "s3")
}

/// Whether the tests run against PostgreSQL.
pub fn is_postgres() -> bool {
    std::env::var("UPLOAD_ONCE_TEST_PG_ADMIN_URL").is_ok()
        || std::env::var("UPLOAD_ONCE_TEST_DATABASE_URL").is_ok_and(|u| u.starts_with("postgres"))
}

/// `sqlite+local`, `postgres+s3`, …
pub fn backend_name() -> String {
    format!("{}+{}", if is_postgres() { "postgres" } else { "sqlite" }, if is_s3() { "s3" } else { "local" })
}

/// Whether a test that needs backends this run lacks must fail rather than
/// skip: when `UPLOAD_ONCE_TEST_REQUIRE_BACKENDS` is set (the xtask sets it
/// for the run that has them), or on CI (`CI=true`) outside the xtask's
/// combinations (`UPLOAD_ONCE_TEST_COMBINATION`), so a backend test is never
/// skipped silently.
pub fn backends_required() -> bool {
    std::env::var_os("UPLOAD_ONCE_TEST_REQUIRE_BACKENDS").is_some()
        || (std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
            && std::env::var_os("UPLOAD_ONCE_TEST_COMBINATION").is_none())
}

/// Whether the S3 endpoint of this run is moto's server
/// (`UPLOAD_ONCE_TEST_S3_FLAVOUR=moto`) rather than testing/s3-server.
pub fn is_moto() -> bool {
    is_s3() && std::env::var("UPLOAD_ONCE_TEST_S3_FLAVOUR").is_ok_and(|f| f == "moto")
}

/// A check a store of S3 makes by itself, which some tests assert.
/// testing/s3-server makes every one; moto's server (the version
/// xtask/src/moto.rs pins) makes none of them. (`CompositeChecksum` and
/// `NoSuchUploadForParts` are moto's bugs: AWS documents these answers.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreCheck {
    /// A presigned URL's SigV4 signature: its key, its query and each
    /// signed header (`Content-Type`, `Content-Length`, `If-None-Match`,
    /// `x-amz-checksum-sha256`).
    Signatures,
    /// A presigned URL's expiry.
    UrlExpiry,
    /// A PUT's `x-amz-checksum-sha256`: verified against the body (`400
    /// BadDigest`), then kept and answered by HEAD.
    PutChecksum,
    /// An `UploadPart`'s `x-amz-checksum-sha256`: verified against the body,
    /// then listed by `ListParts` (`ChecksumSHA256`).
    PartChecksums,
    /// An object assembled from parts answers its checksum as the composite
    /// (`<base64>-<part count>`).
    CompositeChecksum,
    /// `404 NoSuchUpload` for a part sent to an upload completed or aborted.
    NoSuchUploadForParts,
    /// The bucket's CORS rule (only its origins, methods and headers).
    Cors,
    /// `411 MissingContentLength` for a PUT without `Content-Length`.
    ContentLength,
}

impl StoreCheck {
    /// What moto does instead.
    fn on_moto(self) -> &'static str {
        match self {
            StoreCheck::Signatures => "moto verifies no signature",
            StoreCheck::UrlExpiry => "moto never expires a presigned URL",
            StoreCheck::PutChecksum => "moto neither verifies nor keeps a PUT's x-amz-checksum-sha256",
            StoreCheck::PartChecksums => "moto neither verifies nor lists a part's x-amz-checksum-sha256",
            StoreCheck::CompositeChecksum => {
                "moto answers an assembled object's composite checksum without its -<part count>, as if it were the whole object's SHA-256"
            }
            StoreCheck::NoSuchUploadForParts => {
                "moto answers 500 (a KeyError), not 404 NoSuchUpload, to a part for an upload completed or aborted"
            }
            StoreCheck::Cors => "moto grants any origin, method and header, whatever the bucket's CORS rule",
            StoreCheck::ContentLength => "moto takes a PUT without Content-Length",
        }
    }
}

/// Whether this run's S3 store does not make `check`: then `what` (a test,
/// or a step of one) is skipped, and says so with the reason. Never on
/// testing/s3-server, nor with the embedded store.
pub fn store_lacks(what: &str, check: StoreCheck) -> bool {
    if !is_moto() {
        return false;
    }
    println!("{what}: skipped on moto ({check:?}): {}", check.on_moto());
    true
}

/// The S3 endpoint of the test store.
pub fn s3_endpoint() -> String {
    std::env::var("UPLOAD_ONCE_TEST_S3_ENDPOINT").expect("UPLOAD_ONCE_TEST_S3_ENDPOINT (the test S3 server)")
}

/// A fresh lowercase name.
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}{}", &Uuid::new_v4().simple().to_string()[..16])
}

/// The test store's credentials.
pub fn s3_credentials() -> rusty_s3::Credentials {
    rusty_s3::Credentials::new(
        std::env::var("AWS_ACCESS_KEY_ID").expect("AWS_ACCESS_KEY_ID"),
        std::env::var("AWS_SECRET_ACCESS_KEY").expect("AWS_SECRET_ACCESS_KEY"),
    )
}

/// Creates a bucket on an S3 endpoint (signed `CreateBucket`).
pub async fn create_bucket(endpoint: &str, name: &str) {
    use rusty_s3::S3Action;
    let bucket =
        rusty_s3::Bucket::new(endpoint.parse().unwrap(), rusty_s3::UrlStyle::Path, name.to_owned(), "us-east-1")
            .unwrap();
    let credentials = s3_credentials();
    let url = rusty_s3::actions::CreateBucket::new(&bucket, &credentials).sign(Duration::from_secs(60));
    // With `Content-Length: 0`: S3 requires the header on every PUT
    // (`411 MissingContentLength` without it).
    let r = Client::new().put(url).header("content-length", "0").send().await.expect("the test S3 server answers");
    assert!(r.status().is_success(), "create bucket {name}: {} {}", r.status(), r.text().await.unwrap_or_default());
}

/// Creates a database of its own through the PostgreSQL admin URL and
/// returns its URL.
pub async fn create_database(admin_url: &str) -> String {
    use sqlx::Connection;
    let name = unique_name("t_");
    let mut admin = sqlx::PgConnection::connect(admin_url).await.expect("the test PostgreSQL answers");
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin).await.expect("create database");
    let _ = admin.close().await;
    let mut url = reqwest::Url::parse(admin_url).unwrap();
    url.set_path(&format!("/{name}"));
    url.to_string()
}

/// A running server.
pub struct TestServer {
    pub base: String,
    pub state: AppState,
    /// The database every instance of this deployment shares.
    pub database_url: Option<String>,
    /// The bucket (S3 storage).
    pub bucket: Option<String>,
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

/// Wraps a store of the test server (fault injection, observation).
pub type Wrap<T> = Box<dyn FnOnce(Arc<T>) -> Arc<T> + Send>;

/// Options for a test server.
#[derive(Default)]
pub struct Options {
    pub allowed_origins: Vec<String>,
    pub url_ttl: Option<Duration>,
    pub attempt_ttl: Option<Duration>,
    pub session_ttl: Option<Duration>,
    /// Wraps the object store (fault injection).
    pub wrap_objects: Option<Wrap<dyn ObjectStore>>,
    /// Wraps the record store (observation).
    pub wrap_records: Option<Wrap<dyn RecordStore>>,
    /// Use this database (another instance's) instead of a fresh one.
    pub database_url: Option<String>,
    /// Use this bucket (another instance's) instead of a fresh one.
    pub bucket: Option<String>,
    /// Use this S3 endpoint instead of the test store's.
    pub s3_endpoint: Option<String>,
    /// `--signing-key`.
    pub signing_key: Option<String>,
    /// `--public-url`.
    pub public_url: Option<String>,
    /// Use this record store (opened by the test, on `database_url`)
    /// instead of the one the configuration opens.
    pub records: Option<Arc<dyn RecordStore>>,
    /// `--multipart-threshold`.
    pub multipart_threshold: Option<u64>,
    /// `--part-size`.
    pub part_size: Option<u64>,
    /// `--www-dir` (none by default).
    pub www_dir: Option<std::path::PathBuf>,
    /// `--pkg-dir` (none by default).
    pub pkg_dir: Option<std::path::PathBuf>,
    /// Any other setting (quotas, rate limits, timeouts).
    pub configure: Option<Box<dyn FnOnce(&mut Config) + Send>>,
    /// Stops the server gracefully when it resolves (else it runs until
    /// dropped).
    pub shutdown: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Options {
    /// Attempts that live an hour, with URLs of ten minutes: long enough
    /// that a test moves the clock past one and not the other.
    pub fn attempts_of_an_hour() -> Options {
        Options {
            attempt_ttl: Some(Duration::from_secs(3600)),
            url_ttl: Some(Duration::from_secs(600)),
            ..Options::default()
        }
    }
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
        config.www_dir = Some(options.www_dir.unwrap_or_else(|| dir.path().join("no-www")));
        config.pkg_dir = Some(options.pkg_dir.unwrap_or_else(|| dir.path().join("no-pkg")));
        if let Some(ttl) = options.url_ttl {
            config.url_ttl = ttl;
        }
        if let Some(ttl) = options.attempt_ttl {
            config.attempt_ttl = ttl;
        }
        if let Some(ttl) = options.session_ttl {
            config.session_ttl = ttl;
        }
        if let Some(threshold) = options.multipart_threshold {
            config.multipart_threshold = threshold;
        }
        if let Some(part_size) = options.part_size {
            config.part_size = part_size;
        }
        config.signing_key = options.signing_key.map(Secret);
        if let Some(configure) = options.configure {
            configure(&mut config);
        }
        config.public_url = options.public_url;
        let database_url = match (options.database_url, std::env::var("UPLOAD_ONCE_TEST_PG_ADMIN_URL")) {
            (Some(url), _) => Some(url),
            (None, Ok(admin)) => Some(create_database(&admin).await),
            (None, Err(_)) => std::env::var("UPLOAD_ONCE_TEST_DATABASE_URL").ok(),
        };
        config.database_url = database_url.clone();
        // The URL another instance would use for the same records.
        let database_url =
            database_url.or_else(|| Some(format!("sqlite://{}", dir.path().join("upload-once.db").display())));
        let mut bucket = None;
        if is_s3() || options.s3_endpoint.is_some() {
            let endpoint = options.s3_endpoint.unwrap_or_else(s3_endpoint);
            let name = match options.bucket {
                Some(name) => name,
                None => {
                    let name = unique_name("t-");
                    create_bucket(&endpoint, &name).await;
                    name
                }
            };
            config.storage = StorageKind::S3;
            config.s3_endpoint = Some(endpoint);
            config.s3_bucket = Some(name.clone());
            bucket = Some(name);
        }
        let clock = Arc::new(ManualClock::new(now_ms()));
        let mut state = build_state(config, clock.clone() as Arc<dyn Clock>).await.expect("state");
        if let Some(records) = options.records {
            state.records = records;
        }
        if let Some(wrap) = options.wrap_objects {
            state.objects = wrap(state.objects.clone());
        }
        if let Some(wrap) = options.wrap_records {
            state.records = wrap(state.records.clone());
        }
        let shutdown = options.shutdown;
        let task = tokio::spawn(upload_once_server::shutdown::serve(listener, state.clone(), async move {
            match shutdown {
                Some(signal) => drop(signal.await),
                None => std::future::pending().await,
            }
        }));
        TestServer {
            base: format!("http://{addr}"),
            state,
            database_url,
            bucket,
            clock,
            http: Client::builder().pool_max_idle_per_host(64).build().unwrap(),
            _dir: dir,
            task,
        }
    }

    /// Whether the server stopped (after a graceful shutdown).
    pub fn stopped(&self) -> bool {
        self.task.is_finished()
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

    /// `POST /v1/media/{media}/moderation` with `token` (the host's, or
    /// another that must be refused): `decision`, with `reason` if any.
    pub async fn moderate(
        &self,
        token: &str,
        media: impl std::fmt::Display,
        decision: &str,
        reason: Option<&str>,
    ) -> Response {
        let mut body = json!({"decision": decision});
        if let Some(r) = reason {
            body["reason"] = json!(r);
        }
        self.call(Method::POST, &format!("/v1/media/{media}/moderation"), Some(token), Some(body)).await
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

    /// Every stored object key (through the object store, any backend).
    pub async fn stored_keys(&self) -> Vec<String> {
        self.state.objects.list().await.unwrap()
    }

    /// Files left in the embedded store's temporary directory. (An S3 store
    /// keeps its partial uploads to itself: nothing to look at there.)
    pub fn temp_files(&self) -> Vec<String> {
        let Some(_) = self.state.local_store.as_deref() else { return Vec::new() };
        std::fs::read_dir(self.state.config.data_dir.join("objects").join(".tmp"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// Stores an object under `key` with this content type, bypassing the
    /// attempt's own checks: the embedded store's commit, or a PUT to the
    /// bucket through a URL signed for this type and these bytes (with
    /// their real SHA-256, as a store that keeps checksums would have it).
    pub async fn store_directly(&self, key: &str, content_type: &str, bytes: &[u8]) {
        match self.state.local_store.as_deref() {
            Some(local) => {
                let body =
                    futures_util::stream::iter(vec![Ok::<_, std::io::Error>(bytes::Bytes::copy_from_slice(bytes))]);
                let received = local.receive(body, 1 << 20).await.unwrap();
                let commit = local.commit(key, content_type, received, async || Ok(())).await.unwrap();
                assert!(matches!(commit, upload_once_server::storage::local::Commit::Stored(_)));
            }
            None => {
                let sha = upload_once_server::secrets::sha256_hex(bytes);
                let upload = self.state.objects.presign_put(&PutGrant {
                    key,
                    content_type,
                    size: bytes.len() as u64,
                    sha256: Some(&sha),
                    expires_at: self.state.now() + 60_000,
                });
                let r = self.put(&upload, bytes.to_vec()).await;
                assert_eq!(r.status(), StatusCode::OK, "direct PUT: {}", r.text().await.unwrap_or_default());
            }
        }
    }

    /// What an upload URL for `key` starts with.
    pub fn upload_url_prefix(&self, key: &str) -> String {
        match (&self.state.config.s3_endpoint, &self.bucket) {
            (Some(endpoint), Some(bucket)) => format!("{}/{bucket}/{key}?", endpoint.trim_end_matches('/')),
            _ => format!("{}/storage/{key}?", self.base),
        }
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
        upload_once_server::services::sweeper::sweep_once(&self.state).await.unwrap();
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
        let r = self
            .authorize_raw(json!({"id": id, "filename": "photo.png", "size": size, "content_type": "image/png"}))
            .await;
        assert!(r.status().is_success(), "authorize: {}", r.status());
        r.json().await.unwrap()
    }

    /// Authorizes a PNG of `size` bytes, claiming this SHA-256 if any;
    /// expects `201 Created`.
    pub async fn authorize_png(&self, size: u64, sha256: Option<&str>) -> (Uuid, AttemptResponse) {
        let id = Uuid::new_v4();
        let mut body = json!({"id": id, "filename": "photo.png", "size": size, "content_type": "image/png"});
        if let Some(sha) = sha256 {
            body["sha256"] = json!(sha);
        }
        let r = self.authorize_raw(body).await;
        assert_eq!(r.status(), StatusCode::CREATED);
        (id, r.json().await.unwrap())
    }

    /// Authorizes `bytes` as a PNG and PUTs them through its URL (`200`),
    /// leaving the attempt unconfirmed.
    pub async fn authorize_and_put(&self, bytes: &[u8]) -> (Uuid, AttemptResponse) {
        let id = Uuid::new_v4();
        let a = self.authorize(id, bytes.len() as u64).await;
        assert_eq!(self.server.put(a.put().unwrap(), bytes.to_vec()).await.status(), StatusCode::OK);
        (id, a)
    }

    /// Writes a confirm of a PNG of `size` bytes by hand on a connection of
    /// its own, and returns the connection unread: the test hangs up by
    /// dropping it.
    pub async fn send_confirm_by_hand(&self, id: Uuid, size: u64) -> tokio::net::TcpStream {
        use tokio::io::AsyncWriteExt;
        let mut client = tokio::net::TcpStream::connect(self.server.base.trim_start_matches("http://")).await.unwrap();
        let body = json!({"size": size, "content_type": "image/png"}).to_string();
        let request = format!(
            "POST /v1/attempts/{id}/confirm HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nIdempotency-Key: {id}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.session,
            body.len()
        );
        client.write_all(request.as_bytes()).await.unwrap();
        client
    }

    /// `n` confirms of `id` with this body, sent at once: each answer's
    /// status and body.
    pub async fn confirm_concurrently(&self, id: Uuid, body: Value, n: usize) -> Vec<(StatusCode, String)> {
        let confirms = (0..n).map(|_| {
            let body = body.clone();
            async move {
                let r = self.confirm_raw(id, body).await;
                let status = r.status();
                (status, r.text().await.unwrap())
            }
        });
        futures_util::future::join_all(confirms).await
    }

    /// `confirm_raw` on a task of its own (a test holds the confirm inside
    /// the server meanwhile); the request's outcome, a dropped connection
    /// included.
    pub fn spawn_confirm(&self, id: Uuid, body: Value) -> tokio::task::JoinHandle<reqwest::Result<Response>> {
        let request = self
            .server
            .http
            .post(self.server.url(&format!("/v1/attempts/{id}/confirm")))
            .bearer_auth(&self.session)
            .header("Idempotency-Key", id.to_string())
            .json(&body);
        tokio::spawn(request.send())
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
        let (id, _) = self.authorize_and_put(&bytes).await;
        let r = self.confirm(id, bytes.len() as u64).await;
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
        let r =
            self.server.call(Method::POST, "/v1/attempts/status", Some(&self.session), Some(json!({"ids": ids}))).await;
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.unwrap()
    }
}

/// `v` with every link cut at its query (where its signature and expiry
/// are): a link's expiry is rounded up to a step (a day by default), so a
/// test whose clock moves may cross one and get a new signature.
pub fn unsigned(v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with("http") || s.starts_with('/') => {
            Value::String(s.split('?').next().unwrap_or_default().to_owned())
        }
        Value::Array(items) => Value::Array(items.iter().map(unsigned).collect()),
        Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), unsigned(v))).collect()),
        other => other.clone(),
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

/// Which calls of an object store [`GatedObjects`] holds.
#[derive(Clone, Copy)]
pub enum Gate {
    /// Every `head` (holds a confirm inside its transaction).
    Heads,
    /// Every `put` of a key ending with this (holds a rendition worker
    /// before it writes).
    PutsEndingWith(&'static str),
    /// Every whole-object `get` (holds a rendition worker at the
    /// original's read; never released, a server that died there).
    Gets,
}

/// Gates an object store's calls: each call the [`Gate`] names tells
/// `entered`, then waits for a permit of `release` (and uses it up).
pub struct GatedObjects {
    pub entered: Arc<tokio::sync::Notify>,
    pub release: Arc<tokio::sync::Semaphore>,
    pub gate: Gate,
}

impl GatedObjects {
    /// `inner`, whose every `head` waits for a permit.
    pub fn heads(
        inner: Arc<dyn ObjectStore>,
        entered: Arc<tokio::sync::Notify>,
        release: Arc<tokio::sync::Semaphore>,
    ) -> Intercepted<GatedObjects> {
        Intercepted::new(inner, GatedObjects { entered, release, gate: Gate::Heads })
    }
}

#[async_trait]
impl Interceptor for GatedObjects {
    async fn before(&self, call: Call<'_>) -> Result<()> {
        let gated = match self.gate {
            Gate::Heads => call.operation == Operation::Head,
            Gate::PutsEndingWith(suffix) => call.operation == Operation::Put && call.key.ends_with(suffix),
            Gate::Gets => call.operation == Operation::Get,
        };
        if gated {
            self.entered.notify_one();
            self.release.acquire().await.unwrap().forget();
        }
        Ok(())
    }
}

/// A record store that tells the test which attempts the sweeper found
/// due: each `expired_attempts` answer is sent on `due`, before the sweeper
/// goes on to lock them.
pub struct ObservedRecords {
    pub inner: Arc<dyn RecordStore>,
    pub due: tokio::sync::mpsc::UnboundedSender<Vec<i64>>,
}

#[async_trait]
impl RecordStore for ObservedRecords {
    async fn expired_attempts(&self, now: UnixMillis, limit: u32) -> Result<Vec<i64>> {
        let due = self.inner.expired_attempts(now, limit).await?;
        let _ = self.due.send(due.clone());
        Ok(due)
    }

    async fn ping(&self) -> Result<()> {
        self.inner.ping().await
    }
    async fn probe_write(&self, now: UnixMillis) -> Result<()> {
        self.inner.probe_write(now).await
    }
    fn dirty_connections_discarded(&self) -> u64 {
        self.inner.dirty_connections_discarded()
    }
    async fn create_event(&self, event: EventRow) -> Result<EventRow> {
        self.inner.create_event(event).await
    }
    async fn event_by_slug(&self, slug: &str) -> Result<Option<EventRow>> {
        self.inner.event_by_slug(slug).await
    }
    async fn event_by_id(&self, id: i64) -> Result<Option<EventRow>> {
        self.inner.event_by_id(id).await
    }
    async fn set_host_token_hash(&self, event_id: i64, hash: &str) -> Result<()> {
        self.inner.set_host_token_hash(event_id, hash).await
    }
    async fn rotate_credential(
        &self,
        event_id: i64,
        credential: upload_once_server::store::Credential,
        value: &str,
    ) -> Result<()> {
        self.inner.rotate_credential(event_id, credential, value).await
    }
    async fn mark_event_deleted(&self, event_id: i64, now: UnixMillis) -> Result<bool> {
        self.inner.mark_event_deleted(event_id, now).await
    }
    async fn deleted_events(&self, limit: u32) -> Result<Vec<i64>> {
        self.inner.deleted_events(limit).await
    }
    async fn event_attempts(&self, event_id: i64) -> Result<Vec<AttemptRow>> {
        self.inner.event_attempts(event_id).await
    }
    async fn purge_event_rows(&self, event_id: i64, late_delete_at: UnixMillis) -> Result<()> {
        self.inner.purge_event_rows(event_id, late_delete_at).await
    }
    async fn due_late_deletes(&self, now: UnixMillis, limit: u32) -> Result<Vec<String>> {
        self.inner.due_late_deletes(now, limit).await
    }
    async fn forget_late_delete(&self, object_key: &str) -> Result<()> {
        self.inner.forget_late_delete(object_key).await
    }
    async fn remove_rejected(&self, cutoff: UnixMillis, now: UnixMillis) -> Result<u64> {
        self.inner.remove_rejected(cutoff, now).await
    }
    async fn forget_ended(&self, cutoff: UnixMillis, limit: u32) -> Result<(u64, u64)> {
        self.inner.forget_ended(cutoff, limit).await
    }
    async fn removed_media_with_objects(&self, limit: u32) -> Result<Vec<MediaRow>> {
        self.inner.removed_media_with_objects(limit).await
    }
    async fn mark_media_objects_deleted(&self, id: Uuid) -> Result<()> {
        self.inner.mark_media_objects_deleted(id).await
    }
    async fn create_session(&self, session: upload_once_server::store::NewSession) -> Result<SessionRow> {
        self.inner.create_session(session).await
    }
    async fn revoke_session(&self, removal: GuestRemoval) -> Result<Option<Vec<AttemptRow>>> {
        self.inner.revoke_session(removal).await
    }
    async fn reserve(&self, attempt_row_id: i64, until: UnixMillis) -> Result<()> {
        self.inner.reserve(attempt_row_id, until).await
    }
    async fn extend_session(&self, session_id: i64, until: UnixMillis) -> Result<()> {
        self.inner.extend_session(session_id, until).await
    }
    async fn session_by_token_hash(&self, hash: &str) -> Result<Option<SessionRow>> {
        self.inner.session_by_token_hash(hash).await
    }
    async fn authorize(&self, attempt: NewAttempt, dedup: Option<IndexEntry>) -> Result<(AttemptRow, bool)> {
        self.inner.authorize(attempt, dedup).await
    }
    async fn attempt(&self, session_id: i64, id: Uuid) -> Result<Option<AttemptRow>> {
        self.inner.attempt(session_id, id).await
    }
    async fn attempts(&self, session_id: i64, ids: &[Uuid]) -> Result<Vec<AttemptRow>> {
        self.inner.attempts(session_id, ids).await
    }
    async fn attempt_by_object_key(&self, key: &str) -> Result<Option<AttemptRow>> {
        self.inner.attempt_by_object_key(key).await
    }
    async fn lock_attempt(&self, session_id: i64, id: Uuid) -> Result<Option<Box<dyn AttemptLock>>> {
        self.inner.lock_attempt(session_id, id).await
    }
    async fn lock_attempt_row(&self, row_id: i64) -> Result<Option<Box<dyn AttemptLock>>> {
        self.inner.lock_attempt_row(row_id).await
    }
    async fn attempts_with_dead_objects(&self, limit: u32) -> Result<Vec<AttemptRow>> {
        self.inner.attempts_with_dead_objects(limit).await
    }
    async fn part_digests(&self, attempt_row_ids: &[i64]) -> Result<Vec<PartDigest>> {
        self.inner.part_digests(attempt_row_ids).await
    }
    async fn mark_object_deleted(&self, row_id: i64) -> Result<()> {
        self.inner.mark_object_deleted(row_id).await
    }
    async fn sweep_backlog(&self, now: UnixMillis) -> Result<SweepBacklog> {
        self.inner.sweep_backlog(now).await
    }
    async fn media(&self, id: Uuid) -> Result<Option<MediaRow>> {
        self.inner.media(id).await
    }
    async fn media_for_attempts(&self, attempt_row_ids: &[i64]) -> Result<Vec<MediaRow>> {
        self.inner.media_for_attempts(attempt_row_ids).await
    }
    async fn list_media(&self, event_id: i64, moderation: Option<Moderation>) -> Result<Vec<MediaRow>> {
        self.inner.list_media(event_id, moderation).await
    }
    async fn media_page(&self, listing: &MediaListing) -> Result<Vec<MediaRow>> {
        self.inner.media_page(listing).await
    }
    async fn media_changes(&self, event_id: i64, after: i64, limit: u32) -> Result<Vec<MediaRow>> {
        self.inner.media_changes(event_id, after, limit).await
    }
    async fn change_seq(&self, event_id: i64) -> Result<i64> {
        self.inner.change_seq(event_id).await
    }
    async fn media_counts(&self, event_id: i64) -> Result<MediaCounts> {
        self.inner.media_counts(event_id).await
    }
    async fn moderate_many(
        &self,
        event_id: i64,
        ids: &[Uuid],
        decision: ModerationDecision,
        now: UnixMillis,
    ) -> Result<Vec<MediaRow>> {
        self.inner.moderate_many(event_id, ids, decision, now).await
    }
    async fn start_bulk(
        &self,
        event_id: i64,
        decision: ModerationDecision,
        upto_seq: i64,
        now: UnixMillis,
        claimed_until: UnixMillis,
    ) -> Result<BulkModeration> {
        self.inner.start_bulk(event_id, decision, upto_seq, now, claimed_until).await
    }
    async fn bulk(&self, event_id: i64, id: Uuid) -> Result<Option<BulkModeration>> {
        self.inner.bulk(event_id, id).await
    }
    async fn claim_lapsed_bulk(&self, now: UnixMillis, claimed_until: UnixMillis) -> Result<Option<BulkModeration>> {
        self.inner.claim_lapsed_bulk(now, claimed_until).await
    }
    async fn bulk_batch(&self, bulk: &BulkModeration, limit: u32) -> Result<Vec<Uuid>> {
        self.inner.bulk_batch(bulk, limit).await
    }
    async fn bulk_progress(&self, id: Uuid, decided: u64, claimed_until: UnixMillis, finished: bool) -> Result<()> {
        self.inner.bulk_progress(id, decided, claimed_until, finished).await
    }
    async fn moderate(&self, decision: HostDecision<'_>) -> Result<Option<MediaRow>> {
        self.inner.moderate(decision).await
    }
    async fn place_on_wall(&self, media_id: Uuid) -> Result<Option<MediaRow>> {
        self.inner.place_on_wall(media_id).await
    }
    async fn unplaced_on_wall(&self, limit: u32) -> Result<Vec<Uuid>> {
        self.inner.unplaced_on_wall(limit).await
    }
    async fn wall_before_last(&self, event_id: i64, n: u32) -> Result<i64> {
        self.inner.wall_before_last(event_id, n).await
    }
    async fn wall(&self, event_id: i64, after_seq: i64, limit: u32) -> Result<Vec<MediaRow>> {
        self.inner.wall(event_id, after_seq, limit).await
    }
    async fn counts(&self) -> Result<(u64, u64)> {
        self.inner.counts().await
    }
    async fn deduplicated(&self, event_id: i64) -> Result<u64> {
        self.inner.deduplicated(event_id).await
    }
    async fn duplicate_objects(&self, now: UnixMillis, limit: u32) -> Result<Vec<AttemptRow>> {
        self.inner.duplicate_objects(now, limit).await
    }
}

/// An S3 error answer: its status and `<Code>` (empty without a body).
pub async fn s3_error(r: Response) -> (StatusCode, String) {
    let status = r.status();
    let body = r.text().await.unwrap_or_default();
    let code = body.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>")).map(|(c, _)| c.to_owned());
    (status, code.unwrap_or_default())
}

/// PUTs `body` the way a browser would follow `upload` (its URL and
/// headers), with some headers changed (`Some`) or left out (`None`).
pub async fn put_with(
    server: &TestServer,
    url: &str,
    upload: &UploadInstruction,
    changes: &[(&str, Option<&str>)],
    body: reqwest::Body,
) -> Response {
    try_put_with(server, url, upload, changes, body).await.unwrap()
}

/// [`put_with`], where the store may also drop the connection (no answer).
pub async fn try_put_with(
    server: &TestServer,
    url: &str,
    upload: &UploadInstruction,
    changes: &[(&str, Option<&str>)],
    body: reqwest::Body,
) -> reqwest::Result<Response> {
    let mut req = server.http.put(url).body(body);
    for (k, v) in &upload.headers {
        if !changes.iter().any(|(name, _)| name.eq_ignore_ascii_case(k)) {
            req = req.header(k, v);
        }
    }
    for (name, value) in changes {
        if let Some(v) = value {
            req = req.header(*name, *v);
        }
    }
    req.send().await
}

/// Everything the server logs, kept for a test to read: the writer of a
/// tracing subscriber (its clones share one buffer).
#[derive(Clone, Default)]
pub struct CapturedLog(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLog {
    /// How many lines mention `text`.
    pub fn lines_with(&self, text: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock().unwrap()).lines().filter(|l| l.contains(text)).count()
    }

    /// The JSON log lines that mention `text`.
    pub fn json_lines_with(&self, text: &str) -> Vec<Value> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .filter(|l| l.contains(text))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
            .collect()
    }
}

/// Waits until `done` holds, checking every 10 ms; panics with `what` after
/// `limit` (a bound on a hang, not a measure of speed).
pub async fn until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A database of its own for a test that opens the record store itself:
/// PostgreSQL when the run has it, else a SQLite file under `dir`.
pub async fn fresh_database_url(dir: &std::path::Path) -> String {
    match std::env::var("UPLOAD_ONCE_TEST_PG_ADMIN_URL") {
        Ok(admin) => create_database(&admin).await,
        Err(_) => match std::env::var("UPLOAD_ONCE_TEST_DATABASE_URL") {
            Ok(url) if url.starts_with("postgres") => url,
            _ => format!("sqlite://{}", dir.join("records.db").display()),
        },
    }
}

/// A connection from outside the server that holds what writes need:
/// SQLite's write lock, or exclusive locks on PostgreSQL's `attempts` and
/// `readiness` (which `SELECT … FOR UPDATE` and `INSERT` wait for).
pub enum LockHolder {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl LockHolder {
    pub async fn hold(database_url: &str) -> LockHolder {
        use sqlx::Connection;
        if database_url.starts_with("postgres") {
            let mut conn = sqlx::PgConnection::connect(database_url).await.unwrap();
            sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
            sqlx::query("LOCK TABLE attempts, readiness IN EXCLUSIVE MODE").execute(&mut conn).await.unwrap();
            LockHolder::Postgres(conn)
        } else {
            let mut conn = sqlx::SqliteConnection::connect(database_url).await.unwrap();
            sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await.unwrap();
            LockHolder::Sqlite(conn)
        }
    }

    pub async fn release(self) {
        match self {
            LockHolder::Sqlite(mut conn) => sqlx::query("ROLLBACK").execute(&mut conn).await.map(drop).unwrap(),
            LockHolder::Postgres(mut conn) => sqlx::query("ROLLBACK").execute(&mut conn).await.map(drop).unwrap(),
        }
    }
}
