//! S3-compatible object storage (AWS S3, R2, MinIO, GCS interoperability):
//! browsers PUT straight to the bucket through SigV4 presigned URLs; the
//! server checks, serves and deletes objects with its own signed requests.
//!
//! A presigned PUT is bound to the object key, the exact `Content-Type`, the
//! exact `Content-Length` and — when the attempt carries one — the SHA-256
//! (`x-amz-checksum-sha256`, which the store verifies against the body), and
//! it carries `If-None-Match: *` (unless turned off for stores without
//! conditional writes), so an object, once stored, is never overwritten:
//! a confirmed object never changes.
//!
//! Large files go up as one multipart upload per attempt, created with the
//! SHA-256 checksum algorithm: each presigned `UploadPart` is bound to the
//! key, the upload, the part number, the exact `Content-Length` and — when
//! the part's SHA-256 is given — `x-amz-checksum-sha256`. The server lists
//! the parts (`ListParts`, page by page), completes the upload with each
//! part's ETag and checksum, and aborts it (then lists again: S3 may keep a
//! part that was in flight during the abort, and says to abort again).
//!
//! Any failure to reach the store, and any 5xx from it, is
//! [`Error::ObjectStore`]: `503 object_store_unavailable`, retryable.
//!
//! Times: a presigned URL expires at the [`PutGrant`]'s `expires_at`, counted
//! on the server's clock; its `X-Amz-Date` is the real time, since the store
//! checks signatures against its own (real) clock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures_util::StreamExt;
use instant_xml::{FromXml, ToXml};
use rusty_s3::actions::{
    AbortMultipartUpload, CompleteMultipartUpload, CreateMultipartUpload, DeleteObject, GetObject, HeadBucket,
    HeadObject, ListObjectsV2, ListParts, PutObject, UploadPart,
};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use upload_once_core::restrictions::normalize_content_type;
use upload_once_core::time::{UnixMillis, format_rfc3339};
use upload_once_core::wire::UploadInstruction;

use super::{GetAnswer, ListedPart, ObjectBody, ObjectMeta, ObjectStore, PartGrant, PutGrant};
use crate::clock::Clock;
use crate::error::{Error, Result};
use bytes::Bytes;

/// How long the server's own signed requests (HEAD, GET, DELETE, LIST) are
/// valid: they are sent at once.
const REQUEST_TTL: Duration = Duration::from_secs(60);
/// Time limit of a HEAD, DELETE or LIST.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the bucket is and how to reach it.
#[derive(Clone, Debug)]
pub struct S3Settings {
    /// The endpoint, e.g. `https://s3.eu-west-1.amazonaws.com` or
    /// `http://127.0.0.1:9000`.
    pub endpoint: String,
    /// Bucket name.
    pub bucket: String,
    /// Region (signed into every request).
    pub region: String,
    /// Path-style (`endpoint/bucket/key`) rather than virtual-hosted-style
    /// (`bucket.endpoint/key`) URLs.
    pub path_style: bool,
    /// Send `If-None-Match: *` with every PUT (the store refuses to replace
    /// an existing object).
    pub conditional_put: bool,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: String,
    /// Session token of temporary credentials.
    pub session_token: Option<String>,
}

impl S3Settings {
    /// Credentials from the standard AWS environment variables:
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, and optionally
    /// `AWS_SESSION_TOKEN`.
    pub fn credentials_from_env() -> Result<(String, String, Option<String>)> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(key), Some(secret)) => Ok((key, secret, var("AWS_SESSION_TOKEN"))),
            _ => Err(Error::Config(
                "--storage s3 needs credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN optional)".into(),
            )),
        }
    }
}

/// The `x-amz-checksum-sha256` value of a lowercase hex SHA-256: the
/// digest in standard, padded base64 (RFC 4648 §4).
pub fn checksum_header(sha256_hex: &str) -> Option<String> {
    hex::decode(sha256_hex).ok().filter(|b| b.len() == 32).map(|b| STANDARD.encode(b))
}

/// The lowercase hex SHA-256 of an `x-amz-checksum-sha256` value.
fn checksum_from_header(value: &str) -> Option<String> {
    STANDARD.decode(value.trim()).ok().filter(|b| b.len() == 32).map(hex::encode)
}

/// The composite checksum of an `x-amz-checksum-sha256` value of an object
/// assembled from parts (`<base64>-<part count>`), as the media record
/// writes it (lowercase hex, `-`, the count).
fn composite_from_header(value: &str) -> Option<String> {
    let (digest, count) = value.trim().rsplit_once('-')?;
    let count: u32 = count.parse().ok()?;
    Some(format!("{}-{count}", checksum_from_header(digest)?))
}

/// The S3 XML namespace.
const S3_XML_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// One page of a `ListParts` answer (rusty-s3's parser leaves out the
/// parts' checksums).
#[derive(Debug, FromXml)]
#[xml(rename = "ListPartsResult", ns(S3_XML_NS))]
struct ListPartsPage {
    #[xml(rename = "IsTruncated")]
    is_truncated: Option<bool>,
    #[xml(rename = "NextPartNumberMarker")]
    next_part_number_marker: Option<u32>,
    parts: Vec<ListPartsPart>,
}

#[derive(Debug, FromXml)]
#[xml(rename = "Part", ns(S3_XML_NS))]
struct ListPartsPart {
    #[xml(rename = "PartNumber")]
    number: u32,
    #[xml(rename = "ETag")]
    etag: Option<String>,
    #[xml(rename = "Size")]
    size: u64,
    #[xml(rename = "ChecksumSHA256")]
    checksum_sha256: Option<String>,
}

/// The `CompleteMultipartUpload` body: each part's ETag and, when known,
/// its checksum (an upload created with a checksum algorithm needs them).
#[derive(Debug, ToXml)]
#[xml(rename = "CompleteMultipartUpload", ns(S3_XML_NS))]
struct CompleteBody {
    parts: Vec<CompletePart>,
}

#[derive(Debug, ToXml)]
#[xml(rename = "Part", ns(S3_XML_NS))]
struct CompletePart {
    #[xml(rename = "PartNumber")]
    number: u32,
    #[xml(rename = "ETag")]
    etag: String,
    #[xml(rename = "ChecksumSHA256")]
    checksum_sha256: Option<String>,
}

/// The `<Code>` of an S3 error answer.
fn error_code(body: &str) -> Option<&str> {
    body.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>")).map(|(code, _)| code.trim())
}

/// The most parts one `ListParts` page holds (S3's own limit).
const LIST_PARTS_PAGE: u16 = 1000;

fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::ObjectStore(format!("{what}: {e}"))
}

/// An S3-compatible bucket.
pub struct S3ObjectStore {
    bucket: Bucket,
    credentials: Credentials,
    conditional_put: bool,
    list_parts_page: u16,
    http: reqwest::Client,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for S3ObjectStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3ObjectStore").field("bucket", &self.bucket).finish_non_exhaustive()
    }
}

fn real_now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

impl S3ObjectStore {
    /// A store for `settings`; URL expiry is counted on `clock`.
    pub fn new(settings: &S3Settings, clock: Arc<dyn Clock>) -> Result<S3ObjectStore> {
        let endpoint: url::Url = settings
            .endpoint
            .parse()
            .map_err(|e| Error::Config(format!("--s3-endpoint `{}`: {e}", settings.endpoint)))?;
        if endpoint.scheme() == "https" && !cfg!(feature = "s3-tls") {
            return Err(Error::Config(
                "--s3-endpoint is https, but this server was built without the `s3-tls` feature (cargo build --features s3-tls)".into(),
            ));
        }
        let style = if settings.path_style { UrlStyle::Path } else { UrlStyle::VirtualHost };
        let bucket = Bucket::new(endpoint, style, settings.bucket.clone(), settings.region.clone())
            .map_err(|e| Error::Config(format!("--s3-endpoint / --s3-bucket: {e}")))?;
        let credentials = match &settings.session_token {
            Some(token) => Credentials::new_with_token(&settings.access_key, &settings.secret_key, token),
            None => Credentials::new(&settings.access_key, &settings.secret_key),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| Error::Config(format!("HTTP client for the object store: {e}")))?;
        Ok(S3ObjectStore {
            bucket,
            credentials,
            conditional_put: settings.conditional_put,
            list_parts_page: LIST_PARTS_PAGE,
            http,
            clock,
        })
    }

    /// The bucket.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// Lists at most this many parts per `ListParts` page (tests; S3 caps
    /// it at 1000, the default).
    pub fn with_list_parts_page(mut self, page: u16) -> S3ObjectStore {
        self.list_parts_page = page.clamp(1, LIST_PARTS_PAGE);
        self
    }

    /// The presigned lifetime of a URL that must stop working at
    /// `expires_at` on the server's clock, and the signing time: the
    /// remaining lifetime on the server's clock, applied from the real
    /// signing time (whole seconds, rounded down), so the URL never outlives
    /// its grant.
    fn lifetime(&self, expires_at: UnixMillis) -> (Duration, jiff::Timestamp, i64) {
        let exp_secs = expires_at.div_euclid(1000);
        let remaining_ms: UnixMillis = exp_secs * 1000 - self.clock.now();
        let now = real_now();
        let signed_at = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
        let into_second = now.as_millisecond() - signed_at.as_millisecond();
        // Valid until signed_at + expires_in ≤ now + remaining.
        let expires_in = Duration::from_secs(u64::try_from((remaining_ms + into_second).max(0) / 1000).unwrap_or(0));
        (expires_in, signed_at, exp_secs)
    }

    /// The instruction for a browser's PUT of an object or of a part: the
    /// action signed until `expires_at` with `headers`, which the browser
    /// sends as they are listed, and with the exact length, signed but not
    /// listed: the browser sends the length of the Blob by itself (and may
    /// not set it), so a body of any other length fails the signature.
    fn browser_put<'a>(
        &self,
        mut action: impl S3Action<'a>,
        headers: BTreeMap<String, String>,
        size: u64,
        expires_at: UnixMillis,
    ) -> UploadInstruction {
        let (expires_in, signed_at, exp_secs) = self.lifetime(expires_at);
        for (name, value) in &headers {
            action.headers_mut().insert(name.to_ascii_lowercase(), value.clone());
        }
        action.headers_mut().insert("content-length", size.to_string());
        let url = action.sign_with_time(expires_in, &signed_at);
        UploadInstruction {
            method: "PUT".to_owned(),
            url: url.to_string(),
            headers,
            expires_at: format_rfc3339(exp_secs * 1000),
        }
    }

    fn meta_from_headers(headers: &reqwest::header::HeaderMap) -> ObjectMeta {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let checksum = text("x-amz-checksum-sha256");
        let sha256 = checksum.as_deref().and_then(checksum_from_header);
        ObjectMeta {
            composite_sha256: checksum.as_deref().and_then(composite_from_header),
            size: text("content-length").and_then(|l| l.parse().ok()).unwrap_or(0),
            content_type: normalize_content_type(&text("content-type").unwrap_or_default()),
            // The same ETag the embedded store gives when the SHA-256 is
            // known; the store's own otherwise.
            etag: match &sha256 {
                Some(sha) => format!("\"{sha}\""),
                None => text("etag").unwrap_or_default(),
            },
            sha256,
        }
    }

    async fn send(&self, what: &str, request: reqwest::RequestBuilder) -> Result<reqwest::Response> {
        let response = request.send().await.map_err(|e| unavailable(what, e))?;
        if response.status().is_server_error() {
            return Err(unavailable(what, format!("the store answered {}", response.status())));
        }
        Ok(response)
    }

    /// PUTs `size` bytes of `body` whose SHA-256 is `sha256` under `key`
    /// (the bucket checks the checksum).
    async fn put_body(
        &self,
        key: &str,
        content_type: &str,
        sha256: String,
        size: u64,
        body: reqwest::Body,
        timeout: Duration,
    ) -> Result<ObjectMeta> {
        let checksum = checksum_header(&sha256).unwrap_or_default();
        let mut action = PutObject::new(&self.bucket, Some(&self.credentials), key);
        action.headers_mut().insert("content-type", content_type.to_owned());
        action.headers_mut().insert("x-amz-checksum-sha256", checksum.clone());
        let url = action.sign_with_time(REQUEST_TTL, &real_now());
        let request = self
            .http
            .put(url)
            .header("content-type", content_type)
            .header("content-length", size)
            .header("x-amz-checksum-sha256", checksum)
            .body(body)
            .timeout(timeout);
        let response = self.send("PUT", request).await?;
        if !response.status().is_success() {
            return Err(Self::unexpected("PUT", response.status()));
        }
        Ok(ObjectMeta {
            size,
            content_type: content_type.to_owned(),
            etag: format!("\"{sha256}\""),
            sha256: Some(sha256),
            composite_sha256: None,
        })
    }

    fn unexpected(what: &str, status: reqwest::StatusCode) -> Error {
        // 403 and the like: credentials, bucket policy or clock skew. Not a
        // client's fault, and possibly passing (rotated keys): retryable.
        unavailable(what, format!("the store answered {status}"))
    }
}

#[async_trait]
impl ObjectStore for S3ObjectStore {
    fn presign_put(&self, g: &PutGrant<'_>) -> UploadInstruction {
        let mut headers = BTreeMap::new();
        headers.insert("Content-Type".to_owned(), g.content_type.to_owned());
        if self.conditional_put {
            headers.insert("If-None-Match".to_owned(), "*".to_owned());
        }
        if let Some(checksum) = g.sha256.and_then(checksum_header) {
            headers.insert("x-amz-checksum-sha256".to_owned(), checksum);
        }
        let action = PutObject::new(&self.bucket, Some(&self.credentials), g.key);
        self.browser_put(action, headers, g.size, g.expires_at)
    }

    async fn create_multipart(&self, key: &str, content_type: &str) -> Result<String> {
        let mut action = CreateMultipartUpload::new(&self.bucket, Some(&self.credentials), key);
        // SHA-256 checksums for the parts: without it a part sent with
        // x-amz-checksum-sha256 is refused.
        let headers = [("content-type", content_type), ("x-amz-checksum-algorithm", "SHA256")];
        for (name, value) in headers {
            action.headers_mut().insert(name, value);
        }
        let url = action.sign_with_time(REQUEST_TTL, &real_now());
        let mut request = self.http.post(url).timeout(REQUEST_TIMEOUT);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = self.send("CreateMultipartUpload", request).await?;
        if !response.status().is_success() {
            return Err(Self::unexpected("CreateMultipartUpload", response.status()));
        }
        let text = response.text().await.map_err(|e| unavailable("CreateMultipartUpload", e))?;
        let parsed =
            CreateMultipartUpload::parse_response(&text).map_err(|e| unavailable("CreateMultipartUpload", e))?;
        Ok(parsed.upload_id().to_owned())
    }

    fn presign_part(&self, g: &PartGrant<'_>) -> UploadInstruction {
        let mut headers = BTreeMap::new();
        if let Some(checksum) = g.sha256.and_then(checksum_header) {
            headers.insert("x-amz-checksum-sha256".to_owned(), checksum);
        }
        let number = u16::try_from(g.number).unwrap_or(u16::MAX);
        let action = UploadPart::new(&self.bucket, Some(&self.credentials), g.key, number, g.upload_id);
        self.browser_put(action, headers, g.size, g.expires_at)
    }

    async fn list_parts(&self, key: &str, upload_id: &str) -> Result<Option<Vec<ListedPart>>> {
        let mut parts = Vec::new();
        let mut marker: Option<u32> = None;
        loop {
            let mut action = ListParts::new(&self.bucket, Some(&self.credentials), key, upload_id);
            action.set_max_parts(self.list_parts_page);
            if let Some(m) = marker {
                action.set_part_number_marker(u16::try_from(m).unwrap_or(u16::MAX));
            }
            let url = action.sign_with_time(REQUEST_TTL, &real_now());
            let response = self.send("ListParts", self.http.get(url).timeout(REQUEST_TIMEOUT)).await?;
            let status = response.status();
            let text = response.text().await.map_err(|e| unavailable("ListParts", e))?;
            if status == reqwest::StatusCode::NOT_FOUND && error_code(&text) == Some("NoSuchUpload") {
                return Ok(None);
            }
            if !status.is_success() {
                return Err(Self::unexpected("ListParts", status));
            }
            let page: ListPartsPage = instant_xml::from_str(&text).map_err(|e| unavailable("ListParts", e))?;
            parts.extend(page.parts.into_iter().map(|p| ListedPart {
                number: p.number,
                size: p.size,
                sha256: p.checksum_sha256.as_deref().and_then(checksum_from_header),
                etag: p.etag.unwrap_or_default(),
            }));
            match (page.is_truncated, page.next_part_number_marker) {
                (Some(true), Some(next)) if marker.is_none_or(|m| next > m) => marker = Some(next),
                (Some(true), _) => return Err(unavailable("ListParts", "a truncated page without a next marker")),
                _ => break,
            }
        }
        parts.sort_by_key(|p| p.number);
        parts.dedup_by_key(|p| p.number);
        Ok(Some(parts))
    }

    async fn complete_multipart(&self, key: &str, upload_id: &str, parts: &[ListedPart]) -> Result<()> {
        let body = CompleteBody {
            parts: parts
                .iter()
                .map(|p| CompletePart {
                    number: p.number,
                    etag: p.etag.clone(),
                    checksum_sha256: p.sha256.as_deref().and_then(checksum_header),
                })
                .collect(),
        };
        let body = instant_xml::to_string(&body).map_err(|e| unavailable("CompleteMultipartUpload", e))?;
        let action =
            CompleteMultipartUpload::new(&self.bucket, Some(&self.credentials), key, upload_id, std::iter::empty());
        let url = action.sign_with_time(REQUEST_TTL, &real_now());
        // Assembling a large object takes S3 a while: no short time limit.
        let request = self.http.post(url).header("content-type", "application/xml").body(body);
        let response = self.send("CompleteMultipartUpload", request).await?;
        let status = response.status();
        let text = response.text().await.map_err(|e| unavailable("CompleteMultipartUpload", e))?;
        // S3 may answer 200 and still fail, with an error in the body.
        if !status.is_success() || error_code(&text).is_some() {
            let code = error_code(&text).unwrap_or_default().to_owned();
            return Err(unavailable("CompleteMultipartUpload", format!("the store answered {status} {code}")));
        }
        Ok(())
    }

    async fn abort_multipart(&self, key: &str, upload_id: &str) -> Result<()> {
        let url = AbortMultipartUpload::new(&self.bucket, Some(&self.credentials), key, upload_id)
            .sign_with_time(REQUEST_TTL, &real_now());
        let response = self.send("AbortMultipartUpload", self.http.delete(url).timeout(REQUEST_TIMEOUT)).await?;
        let status = response.status();
        if !status.is_success() && status != reqwest::StatusCode::NOT_FOUND {
            return Err(Self::unexpected("AbortMultipartUpload", status));
        }
        // S3 keeps a part whose upload was in flight during the abort, and
        // says to list, and abort again, until none is left.
        match self.list_parts(key, upload_id).await? {
            Some(parts) if !parts.is_empty() => Err(unavailable(
                "AbortMultipartUpload",
                format!("{} parts remain; aborted again on the next pass", parts.len()),
            )),
            _ => Ok(()),
        }
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>> {
        let mut action = HeadObject::new(&self.bucket, Some(&self.credentials), key);
        action.headers_mut().insert("x-amz-checksum-mode", "ENABLED");
        let url = action.sign_with_time(REQUEST_TTL, &real_now());
        let request = self.http.head(url).header("x-amz-checksum-mode", "ENABLED").timeout(REQUEST_TIMEOUT);
        let response = self.send("HEAD", request).await?;
        match response.status() {
            s if s.is_success() => Ok(Some(Self::meta_from_headers(response.headers()))),
            reqwest::StatusCode::NOT_FOUND => Ok(None),
            s => Err(Self::unexpected("HEAD", s)),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        let mut action = GetObject::new(&self.bucket, Some(&self.credentials), key);
        action.headers_mut().insert("x-amz-checksum-mode", "ENABLED");
        let url = action.sign_with_time(REQUEST_TTL, &real_now());
        let request = self.http.get(url).header("x-amz-checksum-mode", "ENABLED");
        let response = self.send("GET", request).await?;
        match response.status() {
            s if s.is_success() => {
                let meta = Self::meta_from_headers(response.headers());
                let stream = response.bytes_stream().map(|chunk| chunk.map_err(std::io::Error::other));
                Ok(Some((meta, Box::pin(stream))))
            }
            reqwest::StatusCode::NOT_FOUND => Ok(None),
            s => Err(Self::unexpected("GET", s)),
        }
    }

    async fn get_range(&self, key: &str, first: u64, last: u64) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        let url = GetObject::new(&self.bucket, Some(&self.credentials), key).sign_with_time(REQUEST_TTL, &real_now());
        let request = self.http.get(url).header("range", format!("bytes={first}-{last}"));
        let response = self.send("GET", request).await?;
        match response.status() {
            s if s.is_success() => {
                let mut meta = Self::meta_from_headers(response.headers());
                // The object's size, not the range's.
                let total = response
                    .headers()
                    .get("content-range")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.rsplit_once('/').and_then(|(_, size)| size.trim().parse::<u64>().ok()));
                if let Some(total) = total {
                    meta.size = total;
                }
                let stream = response.bytes_stream().map(|chunk| chunk.map_err(std::io::Error::other));
                Ok(Some((meta, Box::pin(stream))))
            }
            reqwest::StatusCode::NOT_FOUND => Ok(None),
            s => Err(Self::unexpected("GET", s)),
        }
    }

    async fn put(&self, key: &str, content_type: &str, bytes: Bytes) -> Result<ObjectMeta> {
        let sha256 = crate::secrets::sha256_hex(&bytes);
        let size = bytes.len() as u64;
        self.put_body(key, content_type, sha256, size, bytes.into(), REQUEST_TIMEOUT).await
    }

    async fn put_file(&self, key: &str, content_type: &str, path: &std::path::Path) -> Result<ObjectMeta> {
        // The checksum first (one read), then the body (a second), so that
        // the bucket refuses a body that changed in between.
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        let mut size = 0u64;
        let mut chunks = super::file_chunks(tokio::fs::File::open(path).await?);
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            size += chunk.len() as u64;
            sha2::Digest::update(&mut hasher, &chunk);
        }
        let sha256 = hex::encode(sha2::Digest::finalize(hasher));
        let body = reqwest::Body::wrap_stream(super::file_chunks(tokio::fs::File::open(path).await?));
        // As long as a request may take at the slowest rate a bucket is
        // expected to take (1 MiB/s), and never less than a small object's.
        let timeout = REQUEST_TIMEOUT.max(Duration::from_secs(size >> 20));
        self.put_body(key, content_type, sha256, size, body, timeout).await
    }

    fn presign_get(&self, key: &str, expires_at: UnixMillis, answer: &GetAnswer<'_>) -> Option<String> {
        let (expires_in, signed_at, _) = self.lifetime(expires_at);
        let mut action = GetObject::new(&self.bucket, Some(&self.credentials), key);
        // The store answers with the headers the server would have sent.
        let query = action.query_mut();
        query.insert("response-content-type", answer.content_type.to_owned());
        query.insert("response-cache-control", answer.cache_control.to_owned());
        if let Some(disposition) = answer.disposition {
            query.insert("response-content-disposition", disposition.to_owned());
        }
        Some(action.sign_with_time(expires_in, &signed_at).to_string())
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let url =
            DeleteObject::new(&self.bucket, Some(&self.credentials), key).sign_with_time(REQUEST_TTL, &real_now());
        let response = self.send("DELETE", self.http.delete(url).timeout(REQUEST_TIMEOUT)).await?;
        match response.status() {
            s if s.is_success() || s == reqwest::StatusCode::NOT_FOUND => Ok(()),
            s => Err(Self::unexpected("DELETE", s)),
        }
    }

    /// A signed `HEAD` of the bucket: reachable, there, and the credentials
    /// work.
    async fn probe(&self) -> Result<()> {
        let url = HeadBucket::new(&self.bucket, Some(&self.credentials)).sign_with_time(REQUEST_TTL, &real_now());
        let response = self.send("HEAD bucket", self.http.head(url).timeout(REQUEST_TIMEOUT)).await?;
        match response.status() {
            s if s.is_success() => Ok(()),
            reqwest::StatusCode::NOT_FOUND => {
                Err(unavailable("HEAD bucket", format!("no bucket `{}`", self.bucket.name())))
            }
            s => Err(Self::unexpected("HEAD bucket", s)),
        }
    }

    async fn list(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut action = ListObjectsV2::new(&self.bucket, Some(&self.credentials));
            if let Some(t) = &token {
                action.with_continuation_token(t.clone());
            }
            let url = action.sign_with_time(REQUEST_TTL, &real_now());
            let response = self.send("LIST", self.http.get(url).timeout(REQUEST_TIMEOUT)).await?;
            if !response.status().is_success() {
                return Err(Self::unexpected("LIST", response.status()));
            }
            let text = response.text().await.map_err(|e| unavailable("LIST", e))?;
            let parsed = ListObjectsV2::parse_response(&text).map_err(|e| unavailable("LIST", e))?;
            keys.extend(parsed.contents.into_iter().map(|c| c.key));
            match parsed.next_continuation_token {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        keys.sort();
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_header_is_the_digest_in_standard_base64_and_back() {
        // The AWS example: SHA-256 of "hello".
        let sha = crate::secrets::sha256_hex(b"hello");
        let header = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=";
        assert_eq!(checksum_header(&sha).as_deref(), Some(header));
        assert_eq!(checksum_from_header(header), Some(sha));
        // Not a SHA-256: no header, and no checksum from a header.
        assert_eq!(checksum_header("abcd"), None);
        assert_eq!(checksum_from_header("Zm9vYmFy"), None);
    }

    #[test]
    fn an_assembled_objects_checksum_is_read_as_its_composite() {
        let sha = crate::secrets::sha256_hex(b"hello");
        let header = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=-3";
        assert_eq!(composite_from_header(header), Some(format!("{sha}-3")));
        assert_eq!(checksum_from_header(header), None, "not the whole object's SHA-256");
        assert_eq!(composite_from_header("LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="), None);
    }

    #[test]
    fn a_list_parts_page_is_read_with_each_parts_checksum() {
        let page = r#"<?xml version="1.0" encoding="UTF-8"?>
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Bucket>b</Bucket><Key>k</Key><UploadId>u</UploadId>
              <PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>2</NextPartNumberMarker>
              <MaxParts>2</MaxParts><IsTruncated>true</IsTruncated>
              <Part><PartNumber>1</PartNumber><LastModified>2026-01-01T00:00:00.000Z</LastModified>
                <ETag>"aa"</ETag><Size>5242880</Size>
                <ChecksumSHA256>LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=</ChecksumSHA256></Part>
              <Part><PartNumber>2</PartNumber><ETag>&quot;bb&quot;</ETag><Size>7</Size></Part>
            </ListPartsResult>"#;
        let parsed: ListPartsPage = instant_xml::from_str(page).unwrap();
        assert_eq!((parsed.is_truncated, parsed.next_part_number_marker), (Some(true), Some(2)));
        assert_eq!(parsed.parts.len(), 2);
        assert_eq!(parsed.parts[0].checksum_sha256.as_deref(), Some("LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="));
        assert_eq!(
            (parsed.parts[1].number, parsed.parts[1].size, parsed.parts[1].checksum_sha256.as_deref()),
            (2, 7, None)
        );
        assert_eq!(parsed.parts[1].etag.as_deref(), Some("\"bb\""));
    }

    #[test]
    fn the_complete_body_carries_each_parts_etag_and_checksum() {
        let body = CompleteBody {
            parts: vec![
                CompletePart { number: 1, etag: "\"aa\"".into(), checksum_sha256: Some("LPJN=".into()) },
                CompletePart { number: 2, etag: "\"bb\"".into(), checksum_sha256: None },
            ],
        };
        let xml = instant_xml::to_string(&body).unwrap();
        assert!(
            xml.starts_with("<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<Part><PartNumber>1</PartNumber><ETag>&quot;aa&quot;</ETag><ChecksumSHA256>LPJN=</ChecksumSHA256></Part>"),
            "{xml}"
        );
        assert!(xml.contains("<Part><PartNumber>2</PartNumber><ETag>&quot;bb&quot;</ETag></Part>"), "{xml}");
    }
}
