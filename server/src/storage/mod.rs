//! The object store: where the bytes live. Browsers PUT straight to it with
//! a signed URL; the server only signs, checks (HEAD), serves and deletes.
//! Large files go up in parts of one multipart upload: the server creates
//! it, signs each part, lists the parts the store holds, and completes or
//! aborts it.
//!
//! Handlers only see the [`ObjectStore`] trait (the embedded store's own
//! PUT endpoint and housekeeping get it as a capability of their own,
//! `AppState::local_store`); whatever watches or changes
//! its calls wraps it once, in [`intercept::Intercepted`]. The embedded default is
//! [`local::LocalObjectStore`], served by this server under `/storage/`;
//! production deployments use an S3-compatible bucket
//! ([`s3::S3ObjectStore`]).

pub mod intercept;
pub mod local;
pub mod s3;

use std::io;
use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::Stream;
use upload_once_core::time::UnixMillis;
use upload_once_core::wire::UploadInstruction;

use crate::error::Result;
pub use crate::rules::multipart::ListedPart;

/// What the store knows about a stored object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Size in bytes.
    pub size: u64,
    /// The content type it was stored with.
    pub content_type: String,
    /// SHA-256 as lowercase hex, when the store knows it.
    pub sha256: Option<String>,
    /// For an object assembled from parts, its composite checksum when the
    /// store knows it (see [`crate::rules::multipart::composite_sha256`]).
    pub composite_sha256: Option<String>,
    /// The entity tag.
    pub etag: String,
}

/// A stream of an object's bytes.
pub type ObjectBody = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// What a signed PUT is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutGrant<'a> {
    /// Object key.
    pub key: &'a str,
    /// Exact content type.
    pub content_type: &'a str,
    /// Exact length.
    pub size: u64,
    /// SHA-256 the bytes must have, if any.
    pub sha256: Option<&'a str>,
    /// When the URL stops working.
    pub expires_at: UnixMillis,
}

/// What a signed part PUT is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartGrant<'a> {
    /// The object key the upload assembles.
    pub key: &'a str,
    /// The store's multipart upload.
    pub upload_id: &'a str,
    /// The part number, 1-based.
    pub number: u32,
    /// The part's exact length.
    pub size: u64,
    /// SHA-256 the part's bytes must have, if any.
    pub sha256: Option<&'a str>,
    /// When the URL stops working.
    pub expires_at: UnixMillis,
}

/// How a store that serves a browser directly ([`ObjectStore::presign_get`])
/// must answer: the headers the server would have sent itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetAnswer<'a> {
    /// `Content-Type` of the answer.
    pub content_type: &'a str,
    /// `Content-Disposition`, when not inline.
    pub disposition: Option<&'a str>,
    /// `Cache-Control`.
    pub cache_control: &'a str,
}

/// Where the bytes live.
#[async_trait]
pub trait ObjectStore: Send + Sync + 'static {
    /// A signed PUT for exactly this object.
    fn presign_put(&self, grant: &PutGrant<'_>) -> UploadInstruction;

    /// Starts a multipart upload that will assemble `key` with this content
    /// type; its id.
    async fn create_multipart(&self, key: &str, content_type: &str) -> Result<String>;

    /// A signed PUT for exactly this part of this upload.
    fn presign_part(&self, grant: &PartGrant<'_>) -> UploadInstruction;

    /// The parts the store holds for an upload, by number; `None` when the
    /// store has no such upload (completed, aborted, or never made).
    async fn list_parts(&self, key: &str, upload_id: &str) -> Result<Option<Vec<ListedPart>>>;

    /// Assembles `key` from these parts (as the store listed them, in part
    /// order, with the digests the server knows) and ends the upload.
    async fn complete_multipart(&self, key: &str, upload_id: &str, parts: &[ListedPart]) -> Result<()>;

    /// Aborts an upload so that no part is left behind (an upload already
    /// gone is fine); an error when parts may remain.
    async fn abort_multipart(&self, key: &str, upload_id: &str) -> Result<()>;

    /// The object's metadata, or `None` if it is not stored.
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>>;

    /// The object's metadata and bytes.
    async fn get(&self, key: &str) -> Result<Option<(ObjectMeta, ObjectBody)>>;

    /// The object's metadata and its bytes `first..=last` (both within the
    /// object: the caller checks the range against the size it read with
    /// [`ObjectStore::head`]); `None` if it is not stored.
    async fn get_range(&self, key: &str, first: u64, last: u64) -> Result<Option<(ObjectMeta, ObjectBody)>>;

    /// Stores the server's own bytes under `key` (a photo's renditions),
    /// replacing what is there: every reader sees the old object or the new
    /// one, whole.
    async fn put(&self, key: &str, content_type: &str, bytes: Bytes) -> Result<ObjectMeta>;

    /// Stores the file at `path` under `key` (a video's shareable
    /// rendition), as [`ObjectStore::put`] does, read as it goes rather
    /// than held in memory.
    async fn put_file(&self, key: &str, content_type: &str, path: &std::path::Path) -> Result<ObjectMeta>;

    /// A URL a browser can read the object from directly (ranges included),
    /// answered with `answer`'s headers, valid until `expires_at`; `None`
    /// when this server serves the bytes itself (the embedded store).
    fn presign_get(&self, key: &str, expires_at: UnixMillis, answer: &GetAnswer<'_>) -> Option<String>;

    /// Deletes the object (absent is fine).
    async fn delete(&self, key: &str) -> Result<()>;

    /// Every stored object key, sorted (checkers and tests).
    async fn list(&self) -> Result<Vec<String>>;

    /// Checks, cheaply, that the store can take uploads (the readiness
    /// check): the reason it cannot, as an error.
    async fn probe(&self) -> Result<()>;
}

/// What a query value keeps as it is: RFC 3986's unreserved characters.
const QUERY_VALUE: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Percent-encodes a query value (RFC 3986 unreserved characters kept).
pub fn percent_encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// A file's bytes as a stream of chunks (64 KiB), read as they are taken.
pub fn file_chunks(file: tokio::fs::File) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send + Unpin {
    use tokio::io::AsyncReadExt;
    Box::pin(futures_util::stream::try_unfold(file, |mut file| async move {
        let mut chunk = vec![0; 64 << 10];
        let n = file.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        chunk.truncate(n);
        Ok(Some((Bytes::from(chunk), file)))
    }))
}
