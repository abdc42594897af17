//! The adapter seams: [`Api`] (JSON calls to the app's server, through
//! gloo-net) and [`Transport`] (the PUT of a file's bytes, through
//! XMLHttpRequest because fetch cannot report upload progress). Tests wrap
//! them to inject faults; the driver only sees the traits.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use gloo_net::http::{Request, RequestBuilder};
use js_sys::Promise;
use serde::de::DeserializeOwned;
use upload_once_core::retry::Failure;
use upload_once_core::time::parse_retry_after;
use upload_once_core::wire::{
    AttemptResponse, AuthorizeRequest, ConfirmRequest, CreateSessionRequest, Media, PartsRequest, PartsResponse,
    Problem, SessionResponse, StatusRequest, StatusResponse, UploadInstruction,
};
use uuid::Uuid;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, XmlHttpRequest};

use crate::env::now;
use crate::serde_js::{from_js, to_js};

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = timeoutSignal)]
    fn timeout_signal(ms: u32) -> Option<web_sys::AbortSignal>;
    #[wasm_bindgen(js_name = sendBlob, catch)]
    fn send_blob(
        xhr: &XmlHttpRequest,
        method: &str,
        url: &str,
        headers: &js_sys::Array,
        blob: &Blob,
        on_progress: &Closure<dyn FnMut(f64, f64)>,
    ) -> Result<Promise, JsValue>;
}

/// An API call that has not answered within this time is abandoned (a
/// network failure, retried with backoff).
const API_TIMEOUT_MS: u32 = 30_000;
/// A PUT that has sent no byte for this long is abandoned (a half-open
/// connection would otherwise hold an upload slot forever).
const PUT_IDLE_LIMIT_MS: f64 = 60_000.0;

/// A future that lives on the page's single thread.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// Byte progress: (sent, total).
pub type ProgressFn = Rc<dyn Fn(f64, f64)>;

/// The app's upload API (docs/protocol.md).
pub trait Api {
    /// `POST /v1/events/{slug}/sessions`.
    fn join(&self, guest_code: &str) -> LocalFuture<Result<SessionResponse, Failure>>;
    /// `POST /v1/events/{slug}/attempts`.
    fn authorize(&self, session: &str, request: &AuthorizeRequest) -> LocalFuture<Result<AttemptResponse, Failure>>;
    /// `POST /v1/attempts/{id}/renew`.
    fn renew(&self, session: &str, id: Uuid) -> LocalFuture<Result<AttemptResponse, Failure>>;
    /// `POST /v1/attempts/{id}/confirm` with `Idempotency-Key: <id>`.
    fn confirm(&self, session: &str, id: Uuid, request: &ConfirmRequest) -> LocalFuture<Result<Media, Failure>>;
    /// `POST /v1/attempts/status`.
    fn status(&self, session: &str, ids: &[Uuid]) -> LocalFuture<Result<StatusResponse, Failure>>;
    /// `POST /v1/attempts/{id}/parts`.
    fn sign_parts(
        &self,
        session: &str,
        id: Uuid,
        request: &PartsRequest,
    ) -> LocalFuture<Result<PartsResponse, Failure>>;
    /// `DELETE /v1/attempts/{id}`: the guest withdraws the upload.
    fn withdraw(&self, session: &str, id: Uuid) -> LocalFuture<Result<(), Failure>>;
}

/// Sends a file's bytes to a signed URL.
pub trait Transport {
    /// PUTs `blob` (the whole file, or part `part` of it) as instructed,
    /// reporting progress. The bytes go from the Blob to the network
    /// without passing through wasm memory.
    fn put(
        &self,
        id: Uuid,
        part: Option<u32>,
        blob: &Blob,
        instruction: &UploadInstruction,
        progress: ProgressFn,
    ) -> LocalFuture<Result<(), Failure>>;
    /// Aborts every PUT of attempt `id` that is running.
    fn abort(&self, id: &Uuid);
}

/// Turns an error status and body into a [`Failure`].
pub fn http_failure(status: u16, status_text: &str, body: &str, retry_after: Option<String>) -> Failure {
    // JSON is parsed by the browser; the resulting object is read through
    // the wire type's serde derive.
    let problem = js_sys::JSON::parse(body).ok().and_then(|v| from_js::<Problem>(v).ok());
    let retry_after_ms = retry_after.and_then(|v| parse_retry_after(&v, now()));
    match problem {
        Some(p) => Failure::Http { status, code: Some(p.code), message: p.detail, retry_after_ms },
        // An S3-compatible store answers in XML: a digest it refused is the
        // protocol's `checksum_mismatch`; anything else keeps its status.
        None if s3_digest_refused(body) => Failure::Http {
            status,
            code: Some(upload_once_core::ErrorCode::ChecksumMismatch.as_str().to_owned()),
            message: "the bytes sent are not the ones the upload was authorized for (did the file change?)".to_owned(),
            retry_after_ms,
        },
        None => Failure::Http { status, code: None, message: status_text.to_owned(), retry_after_ms },
    }
}

/// Whether an S3 error body says the bytes did not match their signed
/// SHA-256 (`BadDigest`, `XAmzContentChecksumMismatch`, `XAmzContentSHA256Mismatch`).
fn s3_digest_refused(body: &str) -> bool {
    ["<Code>BadDigest</Code>", "<Code>XAmzContentChecksumMismatch</Code>", "<Code>XAmzContentSHA256Mismatch</Code>"]
        .iter()
        .any(|code| body.contains(code))
}

/// [`Api`] over HTTP with gloo-net.
pub struct HttpApi {
    base: String,
    event: String,
}

impl HttpApi {
    /// Calls the server at `base` (no trailing slash) for event `event`.
    pub fn new(base: &str, event: &str) -> HttpApi {
        HttpApi { base: base.trim_end_matches('/').to_owned(), event: event.to_owned() }
    }

    fn post(&self, path: &str, session: Option<&str>) -> RequestBuilder {
        let request = Request::post(&format!("{}{path}", self.base));
        match session {
            Some(token) => request.header("Authorization", &format!("Bearer {token}")),
            None => request,
        }
    }
}

/// Sends a JSON request; the parsed JSON answer on success.
async fn call_json(request: RequestBuilder, body: Result<JsValue, String>) -> Result<JsValue, Failure> {
    // The body goes over as a JS object and the browser writes the JSON text;
    // the answer's JSON is parsed by the browser too.
    let unexpected = |e: JsValue| Failure::Unexpected(js_sys::Error::from(e).message().into());
    let body = body.map_err(Failure::Unexpected)?;
    let text = js_sys::JSON::stringify(&body).map_err(unexpected)?;
    let signal = timeout_signal(API_TIMEOUT_MS);
    let request = request
        .header("Content-Type", "application/json")
        .abort_signal(signal.as_ref())
        .body(JsValue::from(text))
        .map_err(|_| Failure::Unexpected("the browser refused the request".into()))?;
    let response = request.send().await.map_err(|_| Failure::Network)?;
    let status = response.status();
    if (200..300).contains(&status) {
        // A body cut off mid-way is as ambiguous as no answer at all.
        let raw = web_sys::Response::from(response);
        let parsed = match raw.json() {
            Ok(promise) => JsFuture::from(promise).await.map_err(unexpected)?,
            Err(e) => return Err(unexpected(e)),
        };
        return Ok(parsed);
    }
    Err(failure_of(response).await)
}

/// The [`Failure`] an answer outside 2xx is (its status, its problem body,
/// its `Retry-After`).
async fn failure_of(response: gloo_net::http::Response) -> Failure {
    let retry_after = response.headers().get("retry-after");
    let text = response.text().await.unwrap_or_default();
    http_failure(response.status(), &response.status_text(), &text, retry_after)
}

/// Sends a JSON request and reads the answer as `T`. The request itself is
/// one boxed future shared by every call (smaller than one per answer type).
fn call<T: DeserializeOwned + 'static>(
    request: RequestBuilder,
    body: Result<JsValue, String>,
) -> LocalFuture<Result<T, Failure>> {
    let answer: LocalFuture<Result<JsValue, Failure>> = Box::pin(call_json(request, body));
    Box::pin(async move {
        let parsed = answer.await?;
        from_js(parsed).map_err(|e| Failure::Unexpected(format!("the answer is not what the protocol says: {e}")))
    })
}

impl Api for HttpApi {
    fn join(&self, guest_code: &str) -> LocalFuture<Result<SessionResponse, Failure>> {
        let request = self.post(&format!("/v1/events/{}/sessions", self.event), None);
        let body = to_js(&CreateSessionRequest { guest_code: guest_code.to_owned() });
        call(request, body)
    }

    fn authorize(&self, session: &str, body: &AuthorizeRequest) -> LocalFuture<Result<AttemptResponse, Failure>> {
        let request = self.post(&format!("/v1/events/{}/attempts", self.event), Some(session));
        let body = to_js(body);
        call(request, body)
    }

    fn renew(&self, session: &str, id: Uuid) -> LocalFuture<Result<AttemptResponse, Failure>> {
        let request = self.post(&format!("/v1/attempts/{id}/renew"), Some(session));
        let body = Ok(js_sys::Object::new().into());
        call(request, body)
    }

    fn confirm(&self, session: &str, id: Uuid, body: &ConfirmRequest) -> LocalFuture<Result<Media, Failure>> {
        let request =
            self.post(&format!("/v1/attempts/{id}/confirm"), Some(session)).header("Idempotency-Key", &id.to_string());
        let body = to_js(body);
        call(request, body)
    }

    fn status(&self, session: &str, ids: &[Uuid]) -> LocalFuture<Result<StatusResponse, Failure>> {
        let request = self.post("/v1/attempts/status", Some(session));
        let body = to_js(&StatusRequest { ids: ids.to_vec() });
        call(request, body)
    }

    fn sign_parts(&self, session: &str, id: Uuid, body: &PartsRequest) -> LocalFuture<Result<PartsResponse, Failure>> {
        let request = self.post(&format!("/v1/attempts/{id}/parts"), Some(session));
        call(request, to_js(body))
    }

    fn withdraw(&self, session: &str, id: Uuid) -> LocalFuture<Result<(), Failure>> {
        let signal = timeout_signal(API_TIMEOUT_MS);
        let request = Request::delete(&format!("{}/v1/attempts/{id}", self.base))
            .header("Authorization", &format!("Bearer {session}"))
            .abort_signal(signal.as_ref());
        Box::pin(async move {
            let _signal = signal;
            let response = request.send().await.map_err(|_| Failure::Network)?;
            if (200..300).contains(&response.status()) {
                return Ok(());
            }
            Err(failure_of(response).await)
        })
    }
}

/// [`Transport`] over XMLHttpRequest.
#[derive(Default)]
pub struct XhrTransport {
    /// The PUTs running, by attempt (several for a multipart attempt).
    running: Rc<RefCell<Vec<RunningPut>>>,
}

/// A PUT on the wire: its attempt, its part (of a multipart attempt), and
/// the request.
type RunningPut = (Uuid, Option<u32>, XmlHttpRequest);

impl Transport for XhrTransport {
    fn put(
        &self,
        id: Uuid,
        part: Option<u32>,
        blob: &Blob,
        instruction: &UploadInstruction,
        progress: ProgressFn,
    ) -> LocalFuture<Result<(), Failure>> {
        let running = self.running.clone();
        let blob = blob.clone();
        let instruction = instruction.clone();
        Box::pin(async move {
            let xhr =
                XmlHttpRequest::new().map_err(|_| Failure::Unexpected("XMLHttpRequest is not available".into()))?;
            let last_progress = Rc::new(std::cell::Cell::new(now() as f64));
            let seen = last_progress.clone();
            let on_progress = Closure::<dyn FnMut(f64, f64)>::new(move |loaded: f64, total: f64| {
                seen.set(now() as f64);
                progress(loaded, total)
            });
            let headers: js_sys::Array = instruction
                .headers
                .iter()
                .map(|(name, value)| js_sys::Array::of2(&JsValue::from_str(name), &JsValue::from_str(value)))
                .collect();
            let done = match send_blob(&xhr, &instruction.method, &instruction.url, &headers, &blob, &on_progress) {
                Ok(done) => done,
                Err(e) => {
                    let message = js_sys::Error::from(e).message();
                    return Err(Failure::Unexpected(format!("the browser refused the upload request: {message}")));
                }
            };
            running.borrow_mut().push((id, part, xhr.clone()));
            // Wait for the end, checking now and then that bytes still move.
            let mut done = JsFuture::from(done);
            let kind = loop {
                if let Some(outcome) = crate::env::timeout(10_000.0, &mut done).await {
                    break outcome.ok().and_then(|k| k.as_string()).unwrap_or_default();
                }
                if now() as f64 - last_progress.get() > PUT_IDLE_LIMIT_MS {
                    let _ = xhr.abort();
                }
            };
            running.borrow_mut().retain(|(i, p, _)| !(*i == id && *p == part));
            drop(on_progress);
            if kind != "load" {
                return Err(Failure::Network);
            }
            let status = xhr.status().unwrap_or(0);
            if (200..300).contains(&status) {
                return Ok(());
            }
            if status == 0 {
                return Err(Failure::Network);
            }
            let body = xhr.response_text().ok().flatten().unwrap_or_default();
            let retry_after = xhr.get_response_header("retry-after").ok().flatten();
            Err(http_failure(status, &xhr.status_text().unwrap_or_default(), &body, retry_after))
        })
    }

    fn abort(&self, id: &Uuid) {
        let aborted: Vec<XmlHttpRequest> = {
            let mut running = self.running.borrow_mut();
            let (these, rest): (Vec<_>, Vec<_>) = running.drain(..).partition(|(i, _, _)| i == id);
            *running = rest;
            these.into_iter().map(|(_, _, xhr)| xhr).collect()
        };
        for xhr in aborted {
            let _ = xhr.abort();
        }
    }
}
