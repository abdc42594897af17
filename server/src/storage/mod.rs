//! The object store: where the bytes live. Browsers PUT straight to it with
//! a signed URL; the server only signs, checks (HEAD), serves and deletes.
//!
//! Handlers only see the [`ObjectStore`] trait. The embedded default is
//! [`local::LocalObjectStore`], served by this server under `/storage/`;
//! production deployments use an S3-compatible bucket
//! ([`s3::S3ObjectStore`]).

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

/// What the store knows about a stored object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Size in bytes.
    pub size: u64,
    /// The content type it was stored with.
    pub content_type: String,
    /// SHA-256 as lowercase hex, when the store knows it.
    pub sha256: Option<String>,
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

/// Where the bytes live.
#[async_trait]
pub trait ObjectStore: Send + Sync + 'static {
    /// A signed PUT for exactly this object.
    fn presign_put(&self, grant: &PutGrant<'_>) -> UploadInstruction;

    /// The object's metadata, or `None` if it is not stored.
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>>;

    /// The object's metadata and bytes.
    async fn get(&self, key: &str) -> Result<Option<(ObjectMeta, ObjectBody)>>;

    /// Deletes the object (absent is fine).
    async fn delete(&self, key: &str) -> Result<()>;

    /// Every stored object key, sorted (checkers and tests).
    async fn list(&self) -> Result<Vec<String>>;

    /// Checks, cheaply, that the store can take uploads (the readiness
    /// check): the reason it cannot, as an error.
    async fn probe(&self) -> Result<()>;

    /// The local store, when this is one (its PUT endpoint is served by this
    /// server).
    fn as_local(&self) -> Option<&local::LocalObjectStore> {
        None
    }
}

/// What a query value keeps as it is: RFC 3986's unreserved characters.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes a query value (RFC 3986 unreserved characters kept).
pub fn percent_encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY_VALUE).to_string()
}
