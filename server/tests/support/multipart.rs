//! Multipart uploads in the tests: a server that splits files above 5 MiB
//! into 5 MiB parts (S3's smallest), files of 11 MiB (parts of 5, 5 and 1
//! MiB), and a guest that signs, sends and confirms parts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use bytes::Bytes;
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use std::time::Instant;
use upload_once_core::wire::{AttemptResponse, MultipartPlan, PartsResponse, SignedPart, Upload, UploadInstruction};
use upload_once_server::secrets::sha256_hex;

use upload_once_server::storage::intercept::{Call, Intercepted, Interceptor, Operation};
use upload_once_server::storage::{ListedPart, ObjectMeta};
use upload_once_server::{Error, Result};
use uuid::Uuid;

use super::{Guest, Options, TestServer};

pub const MIB: u64 = 1024 * 1024;
/// The part size (and the threshold) of the tests' servers.
pub const PART: u64 = 5 * MIB;
/// A file in three parts: 5, 5 and 1 MiB.
pub const FILE: u64 = 11 * MIB;
/// The content type of the tests' large files.
pub const VIDEO: &str = "video/mp4";

/// Options of a server that splits files above [`PART`] into parts of
/// [`PART`].
pub fn options() -> Options {
    Options { multipart_threshold: Some(PART), part_size: Some(PART), ..Default::default() }
}

/// `len` bytes that differ from part to part and from seed to seed.
pub fn file(len: u64, seed: u8) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(seed);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// The multipart plan of an authorize or renew answer.
pub fn plan(answer: &AttemptResponse) -> MultipartPlan {
    match &answer.upload {
        Some(Upload::Multipart(plan)) => plan.clone(),
        other => panic!("expected a multipart plan, got {other:?}"),
    }
}

/// Part `number`'s bytes of `bytes`.
pub fn part(bytes: &[u8], plan: &MultipartPlan, number: u32) -> Vec<u8> {
    let (start, end) = plan.range(number, bytes.len() as u64);
    bytes[start as usize..end as usize].to_vec()
}

/// The composite of the file each attempt's parts were last sent from (by
/// [`Guest::send_parts`]), for [`Guest::confirm_video`].
fn sent_file() -> &'static Mutex<std::collections::HashMap<Uuid, String>> {
    static SENT: OnceLock<Mutex<std::collections::HashMap<Uuid, String>>> = OnceLock::new();
    SENT.get_or_init(Default::default)
}

/// The composite checksum the media record must carry: SHA-256 over the
/// parts' raw digests, `-`, the count (computed here, independently of the
/// server).
pub fn composite(bytes: &[u8], plan: &MultipartPlan) -> String {
    let mut raw = Vec::new();
    for n in 1..=plan.part_count {
        raw.extend(hex::decode(sha256_hex(&part(bytes, plan, n))).unwrap());
    }
    format!("{}-{}", sha256_hex(&raw), plan.part_count)
}

impl TestServer {
    /// A guest of a fresh event that takes large videos (no moderation
    /// needed: `required`).
    pub async fn big_guest(&self) -> Guest<'_> {
        let slug = format!("big-{}", &Uuid::new_v4().simple().to_string()[..12]);
        let event = self.create_event(&slug, 1 << 40, &[VIDEO, "image/*"], "required").await;
        let session = self.join(&event).await;
        Guest { server: self, event, session }
    }

    /// The store's multipart upload of an attempt, as recorded.
    pub async fn upload_id(&self, key: &str) -> Option<String> {
        self.state.records.attempt_by_object_key(key).await.unwrap().unwrap().upload_id
    }

    /// Whether the object store still holds the upload (the embedded
    /// store: its directory; S3: `ListParts` does not answer
    /// `NoSuchUpload`).
    pub async fn upload_is_open(&self, key: &str, upload_id: &str) -> bool {
        let listed = self.state.objects.list_parts(key, upload_id).await.unwrap();
        if let Some(local) = self.state.local_store.as_deref() {
            let open = local.open_uploads().await.unwrap().contains(&upload_id.to_owned());
            assert_eq!(open, listed.is_some(), "the embedded store lists what its directory holds");
        }
        listed.is_some()
    }

    /// The part numbers the store lists for an upload.
    pub async fn listed_parts(&self, key: &str, upload_id: &str) -> Vec<u32> {
        let listed = self.state.objects.list_parts(key, upload_id).await.unwrap().unwrap_or_default();
        listed.iter().map(|p| p.number).collect()
    }

    /// Every multipart upload the embedded store still holds (S3: none to
    /// look at).
    pub async fn open_local_uploads(&self) -> Vec<String> {
        match self.state.local_store.as_deref() {
            Some(local) => local.open_uploads().await.unwrap(),
            None => Vec::new(),
        }
    }

    /// An object's bytes, read back from the store.
    pub async fn object_bytes(&self, key: &str) -> Vec<u8> {
        use futures_util::StreamExt;
        let (_, mut stream) = self.state.objects.get(key).await.unwrap().expect("object stored");
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk.unwrap());
        }
        out
    }
}

impl Guest<'_> {
    /// Authorizes a [`FILE`]-byte video made from `seed` (see [`file`]):
    /// its id, its bytes, the authorize answer and its multipart plan.
    pub async fn authorize_file(&self, seed: u8) -> (Uuid, Vec<u8>, AttemptResponse, MultipartPlan) {
        let bytes = file(FILE, seed);
        let id = Uuid::new_v4();
        let authorized = self.authorize_video(id, FILE).await;
        let plan = plan(&authorized);
        (id, bytes, authorized, plan)
    }

    /// Authorizes a video of `size` bytes.
    pub async fn authorize_video(&self, id: Uuid, size: u64) -> AttemptResponse {
        let r =
            self.authorize_raw(json!({"id": id, "filename": "clip.mp4", "size": size, "content_type": VIDEO})).await;
        assert!(r.status().is_success(), "authorize: {}", r.status());
        r.json().await.unwrap()
    }

    /// `POST /v1/attempts/{id}/parts` with this body.
    pub async fn sign_raw(&self, id: Uuid, body: Value) -> Response {
        self.server.call(Method::POST, &format!("/v1/attempts/{id}/parts"), Some(&self.session), Some(body)).await
    }

    /// Signs parts of `bytes` (each with its SHA-256).
    pub async fn sign(&self, id: Uuid, bytes: &[u8], plan: &MultipartPlan, numbers: &[u32]) -> Vec<SignedPart> {
        let parts: Vec<Value> =
            numbers.iter().map(|n| json!({"number": n, "sha256": sha256_hex(&part(bytes, plan, *n))})).collect();
        let r = self.sign_raw(id, json!({"parts": parts})).await;
        assert_eq!(r.status(), StatusCode::OK, "sign parts");
        let answer: PartsResponse = r.json().await.unwrap();
        assert_eq!(
            answer.parts.iter().map(|p| p.number).collect::<Vec<_>>(),
            numbers,
            "one URL per part, in request order"
        );
        answer.parts
    }

    /// Signs and PUTs parts of `bytes`, each expected to be stored.
    pub async fn send_parts(&self, id: Uuid, bytes: &[u8], plan: &MultipartPlan, numbers: &[u32]) {
        sent_file().lock().unwrap().insert(id, composite(bytes, plan));
        for signed in self.sign(id, bytes, plan, numbers).await {
            let r = self.server.put(&signed.upload, part(bytes, plan, signed.number)).await;
            assert_eq!(r.status(), StatusCode::OK, "part {}: {}", signed.number, r.text().await.unwrap_or_default());
        }
    }

    /// Confirms a video of `size` bytes, with the composite checksum of the
    /// file whose parts it sent last (as a client does: it confirms the file
    /// it holds), if any.
    pub async fn confirm_video(&self, id: Uuid, size: u64) -> Response {
        let mut body = json!({"size": size, "content_type": VIDEO});
        if let Some(composite) = sent_file().lock().unwrap().get(&id) {
            body["composite_sha256"] = json!(composite);
        }
        self.confirm_raw(id, body).await
    }

    /// Confirms a video of `size` bytes without a composite checksum (an
    /// older client).
    pub async fn confirm_video_without_composite(&self, id: Uuid, size: u64) -> Response {
        self.confirm_raw(id, json!({"size": size, "content_type": VIDEO})).await
    }

    /// `GET /v1/attempts/{id}`, as JSON.
    pub async fn status_of(&self, id: Uuid) -> Value {
        let r = self.get(id).await;
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.unwrap()
    }
}

/// An object store with the multipart faults and observations the tests
/// need: it counts uploads made and completed, can lose a complete's
/// answer (after the store completed), refuse to abort one upload, and
/// list parts without their digests (a store that cannot).
pub struct MultipartFaults {
    pub creates: AtomicU64,
    pub completes: AtomicU64,
    /// The next complete's answer is lost (once).
    pub lose_complete_answer: AtomicBool,
    /// Aborting this upload fails.
    pub refuse_abort: Mutex<Option<String>>,
    /// Parts are listed without their digests.
    pub hide_digests: AtomicBool,
}

impl MultipartFaults {
    pub fn new() -> MultipartFaults {
        MultipartFaults {
            creates: AtomicU64::new(0),
            completes: AtomicU64::new(0),
            lose_complete_answer: AtomicBool::new(false),
            refuse_abort: Mutex::new(None),
            hide_digests: AtomicBool::new(false),
        }
    }

    /// Options whose object store is wrapped in `faults` (set once the
    /// server is built).
    pub fn options(faults: std::sync::Arc<std::sync::OnceLock<std::sync::Arc<MultipartFaults>>>) -> Options {
        Options {
            wrap_objects: Some(Box::new(move |inner| {
                let shared = std::sync::Arc::new(MultipartFaults::new());
                let _ = faults.set(shared.clone());
                std::sync::Arc::new(Intercepted::new(inner, shared))
            })),
            ..options()
        }
    }

    /// A server of [`MultipartFaults::options`], and its faults (none set
    /// yet).
    pub async fn start() -> (TestServer, Arc<MultipartFaults>) {
        let faults = Arc::new(OnceLock::new());
        let server = TestServer::start_with(MultipartFaults::options(faults.clone())).await;
        let faults = faults.get().unwrap().clone();
        (server, faults)
    }
}

#[async_trait]
impl Interceptor for MultipartFaults {
    async fn before(&self, call: Call<'_>) -> Result<()> {
        match call.operation {
            Operation::CreateMultipart => {
                self.creates.fetch_add(1, Ordering::SeqCst);
            }
            Operation::CompleteMultipart => {
                self.completes.fetch_add(1, Ordering::SeqCst);
            }
            Operation::AbortMultipart if self.refuse_abort.lock().unwrap().as_deref() == call.upload_id => {
                return Err(Error::ObjectStore("the store refused to abort".into()));
            }
            _ => {}
        }
        Ok(())
    }
    async fn after(&self, call: Call<'_>, _started: Instant, failed: bool) -> Result<()> {
        if call.operation == Operation::CompleteMultipart
            && !failed
            && self.lose_complete_answer.swap(false, Ordering::SeqCst)
        {
            return Err(Error::ObjectStore("the complete's answer was lost".into()));
        }
        Ok(())
    }
    fn meta(&self, meta: ObjectMeta) -> ObjectMeta {
        if self.hide_digests.load(Ordering::SeqCst) {
            return ObjectMeta { composite_sha256: None, ..meta };
        }
        meta
    }
    fn parts(&self, parts: Vec<ListedPart>) -> Vec<ListedPart> {
        if self.hide_digests.load(Ordering::SeqCst) {
            return parts.into_iter().map(|p| ListedPart { sha256: None, ..p }).collect();
        }
        parts
    }
}

/// The multipart upload a signed part URL is bound to (the embedded
/// store's `upload`, S3's `uploadId`).
pub fn upload_of(url: &str) -> String {
    let url = reqwest::Url::parse(url).unwrap();
    let found = url.query_pairs().find(|(k, _)| k == "upload" || k == "uploadId").map(|(_, v)| v.into_owned());
    found.expect("a part URL names its upload")
}

/// PUTs `body` as `upload` says, to a store expected to refuse it by its
/// headers (signature, expiry): its answer's status and S3 `<Code>`, or
/// `None` when the store answered by closing the connection before the body
/// was sent, which S3 may do for a request refused by its headers.
pub async fn refused_by_s3(
    server: &TestServer,
    url: &str,
    upload: &UploadInstruction,
    body: Vec<u8>,
) -> Option<(StatusCode, String)> {
    match super::try_put_with(server, url, upload, &[], body.into()).await {
        Ok(r) => Some(super::s3_error(r).await),
        Err(e) => {
            assert!(e.is_request() && !e.is_timeout(), "only a closed connection may stand for the refusal: {e}");
            None
        }
    }
}

/// Starts a PUT of `body` as `upload` says (its `Content-Length` the whole
/// body's) on a task of its own, sends the first `sent` bytes and holds
/// back the rest: the test sends them (or not) on the returned channel, and
/// ends the body by dropping it. The task answers the request's outcome.
pub async fn held_back_put(
    server: &TestServer,
    upload: &UploadInstruction,
    body: &[u8],
    sent: usize,
) -> (tokio::sync::mpsc::Sender<std::io::Result<Bytes>>, tokio::task::JoinHandle<reqwest::Result<Response>>) {
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(4);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|chunk| (chunk, rx)) });
    let put = {
        let http = server.http.clone();
        let upload = upload.clone();
        let len = body.len();
        tokio::spawn(async move {
            let mut req = http.put(&upload.url).header("content-length", len).body(reqwest::Body::wrap_stream(stream));
            for (k, v) in &upload.headers {
                req = req.header(k, v);
            }
            req.send().await
        })
    };
    tx.send(Ok(Bytes::copy_from_slice(&body[..sent]))).await.unwrap();
    (tx, put)
}
