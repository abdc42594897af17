//! The embedded object store: files under `<data-dir>/objects/`, written
//! through expiring HMAC-signed URLs that this server answers under
//! `/storage/{key}`.
//!
//! A signed URL binds the object key, content type, exact length, optional
//! SHA-256 and expiry. Bytes are streamed to a temporary file, hashed and
//! counted, then moved into place atomically, so a reader sees either no
//! object or the whole object. Objects are write-once: the same bytes again
//! are accepted (an idempotent repeat), different bytes are refused.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;
use upload_once_core::ErrorCode;
use upload_once_core::time::{UnixMillis, format_rfc3339};
use upload_once_core::wire::UploadInstruction;

use super::{ObjectBody, ObjectMeta, ObjectStore, PutGrant, percent_encode};
use crate::error::{Error, Result};
use crate::secrets::{Signer, random_bytes};

/// The query parameters of a signed storage URL.
#[derive(Clone, Debug, Deserialize, utoipa::IntoParams)]
pub struct SignedQuery {
    /// Content type.
    pub ct: String,
    /// Exact length.
    pub len: u64,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// SHA-256 the body must have.
    #[serde(default)]
    pub sha: Option<String>,
    /// HMAC signature.
    pub sig: String,
}

#[derive(Serialize, Deserialize)]
struct MetaFile {
    size: u64,
    content_type: String,
    sha256: String,
}

/// How a finished upload was filed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Stored now.
    Stored(ObjectMeta),
    /// The same bytes were already stored: nothing changed.
    AlreadyStored(ObjectMeta),
}

/// A body received into a temporary file, not yet in place.
#[derive(Debug)]
pub struct Received {
    path: PathBuf,
    /// Bytes received.
    pub size: u64,
    /// Their SHA-256.
    pub sha256: String,
}

impl Drop for Received {
    fn drop(&mut self) {
        // Moved into place, or abandoned: either way the temp file goes.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A disk failure is the object store being unavailable (503, retryable),
/// not a server bug.
fn unavailable(e: Error) -> Error {
    match e {
        Error::Io(io) => Error::ObjectStore(io.to_string()),
        other => other,
    }
}

/// Whether a key is one this server could have generated: lowercase
/// alphanumerics and `-`, segments separated by `/`. Nothing else reaches
/// the filesystem.
pub fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// Files on local disk, written through signed URLs.
#[derive(Debug)]
pub struct LocalObjectStore {
    root: PathBuf,
    public_base: String,
    signer: Signer,
    /// Serialises moving objects into place and deleting them, so a check
    /// of the attempt's state and the move happen as one step.
    commit_lock: Mutex<()>,
}

impl LocalObjectStore {
    /// A store under `root`, signing URLs that start with `public_base`.
    pub fn open(root: &Path, public_base: &str, signer: Signer) -> Result<LocalObjectStore> {
        std::fs::create_dir_all(root.join(".tmp"))?;
        Ok(LocalObjectStore {
            root: root.to_owned(),
            public_base: public_base.to_owned(),
            signer,
            commit_lock: Mutex::new(()),
        })
    }

    fn message(
        key: &str,
        content_type: &str,
        size: u64,
        exp_secs: i64,
        sha: Option<&str>,
    ) -> String {
        format!(
            "PUT\n{key}\n{content_type}\n{size}\n{exp_secs}\n{}",
            sha.unwrap_or("")
        )
    }

    fn object_path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    fn meta_path(&self, key: &str) -> PathBuf {
        self.root.join(format!("{key}.meta"))
    }

    /// Checks a signed URL: the signature first (`bad_signature`), then the
    /// expiry (`url_expired`).
    pub fn verify(&self, key: &str, q: &SignedQuery, now: UnixMillis) -> Result<()> {
        let message = Self::message(key, &q.ct, q.len, q.exp, q.sha.as_deref());
        if !is_valid_key(key) || !self.signer.verify(&message, &q.sig) {
            return Err(Error::problem(
                ErrorCode::BadSignature,
                "the upload URL's signature does not match its parameters",
            ));
        }
        if q.exp.saturating_mul(1000) <= now {
            return Err(Error::problem(
                ErrorCode::UrlExpired,
                "the upload URL has expired; ask for a new one",
            ));
        }
        Ok(())
    }

    /// Streams a body into a temporary file, refusing more than `max` bytes.
    pub async fn receive<S, E>(&self, mut body: S, max: u64) -> Result<Received>
    where
        S: Stream<Item = std::result::Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let mut name = [0u8; 16];
        random_bytes(&mut name);
        let path = self.root.join(".tmp").join(hex::encode(name));
        let mut file = tokio::fs::File::create(&path).await?;
        let mut received = Received {
            path,
            size: 0,
            sha256: String::new(),
        };
        let mut hasher = Sha256::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| {
                Error::problem(
                    ErrorCode::IncompleteBody,
                    format!("the upload was cut off after {} bytes: {e}", received.size),
                )
            })?;
            received.size += chunk.len() as u64;
            if received.size > max {
                return Err(Error::problem(
                    ErrorCode::LengthMismatch,
                    format!("the body is longer than the signed {max} bytes"),
                ));
            }
            hasher.update(&chunk);
            file.write_all(&chunk).await?;
        }
        file.sync_all().await?;
        received.sha256 = hex::encode(hasher.finalize());
        Ok(received)
    }

    /// Moves a received body into place, unless `allow` (checked under the
    /// commit lock) says no or different bytes are already there.
    pub async fn commit<F>(
        &self,
        key: &str,
        content_type: &str,
        received: Received,
        allow: F,
    ) -> Result<Commit>
    where
        F: AsyncFnOnce() -> Result<()>,
    {
        let _guard = self.commit_lock.lock().await;
        allow().await?;
        if let Some(existing) = self.read_meta(key).await? {
            return if existing.sha256.as_deref() == Some(received.sha256.as_str())
                && existing.content_type == content_type
            {
                Ok(Commit::AlreadyStored(existing))
            } else {
                Err(Error::problem(
                    ErrorCode::ObjectExists,
                    "different bytes are already stored under this key",
                ))
            };
        }
        let meta = MetaFile {
            size: received.size,
            content_type: content_type.to_owned(),
            sha256: received.sha256.clone(),
        };
        let object_path = self.object_path(key);
        if let Some(parent) = object_path.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        // The metadata lands first; the object's rename is the commit point.
        let meta_tmp = received.path.with_extension("meta");
        {
            // On disk before it is named: a power cut never leaves a
            // confirmed object with empty metadata.
            let mut file = tokio::fs::File::create(&meta_tmp).await?;
            file.write_all(&serde_json::to_vec(&meta).unwrap_or_default())
                .await?;
            file.sync_all().await?;
        }
        tokio::fs::rename(&meta_tmp, self.meta_path(key)).await?;
        tokio::fs::rename(&received.path, &object_path).await?;
        if let Some(parent) = object_path.parent() {
            if let Ok(dir) = tokio::fs::File::open(parent).await {
                let _ = dir.sync_all().await;
            }
        }
        Ok(Commit::Stored(Self::to_meta(meta)))
    }

    fn to_meta(m: MetaFile) -> ObjectMeta {
        ObjectMeta {
            size: m.size,
            content_type: m.content_type,
            etag: format!("\"{}\"", m.sha256),
            sha256: Some(m.sha256),
        }
    }

    async fn read_meta(&self, key: &str) -> Result<Option<ObjectMeta>> {
        if !is_valid_key(key) {
            return Ok(None);
        }
        let object = match tokio::fs::metadata(self.object_path(key)).await {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let bytes = match tokio::fs::read(self.meta_path(key)).await {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta: MetaFile = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidData, e)))?;
        if meta.size != object.len() {
            return Ok(None);
        }
        Ok(Some(Self::to_meta(meta)))
    }

    /// Every stored object key (checkers and tests).
    pub async fn list_keys(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let mut entries = tokio::fs::read_dir(&dir).await?;
            while let Some(entry) = entries.next_entry().await? {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    continue;
                }
                if entry.file_type().await?.is_dir() {
                    stack.push(path);
                } else if !name.ends_with(".meta") {
                    if let Ok(rel) = path.strip_prefix(&self.root) {
                        keys.push(rel.to_string_lossy().replace('\\', "/"));
                    }
                }
            }
        }
        keys.sort();
        Ok(keys)
    }
}

#[async_trait]
impl ObjectStore for LocalObjectStore {
    fn presign_put(&self, g: &PutGrant<'_>) -> UploadInstruction {
        let exp_secs = g.expires_at.div_euclid(1000);
        let sig = self.signer.sign(&Self::message(
            g.key,
            g.content_type,
            g.size,
            exp_secs,
            g.sha256,
        ));
        let mut url = format!(
            "{}/storage/{}?ct={}&len={}&exp={}",
            self.public_base,
            g.key,
            percent_encode(g.content_type),
            g.size,
            exp_secs
        );
        if let Some(sha) = g.sha256 {
            url.push_str("&sha=");
            url.push_str(sha);
        }
        url.push_str("&sig=");
        url.push_str(&sig);
        let mut headers = BTreeMap::new();
        headers.insert("Content-Type".to_owned(), g.content_type.to_owned());
        UploadInstruction {
            method: "PUT".to_owned(),
            url,
            headers,
            expires_at: format_rfc3339(exp_secs * 1000),
        }
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>> {
        self.read_meta(key).await.map_err(unavailable)
    }

    async fn get(&self, key: &str) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        let Some(meta) = self.read_meta(key).await.map_err(unavailable)? else {
            return Ok(None);
        };
        let file = match tokio::fs::File::open(self.object_path(key)).await {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unavailable(e.into())),
        };
        let stream = futures_util::stream::unfold(file, |mut file| async move {
            use tokio::io::AsyncReadExt;
            let mut buf = vec![0u8; 64 * 1024];
            match file.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok(Bytes::from(buf)), file))
                }
                Err(e) => Some((Err(e), file)),
            }
        });
        Ok(Some((meta, Box::pin(stream))))
    }

    async fn delete(&self, key: &str) -> Result<()> {
        if !is_valid_key(key) {
            return Ok(());
        }
        let _guard = self.commit_lock.lock().await;
        for path in [self.object_path(key), self.meta_path(key)] {
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(unavailable(e.into())),
            }
        }
        Ok(())
    }

    async fn list(&self) -> Result<Vec<String>> {
        self.list_keys().await.map_err(unavailable)
    }

    /// Writes, syncs and removes a small file where uploads are received,
    /// so a full disk, a read-only mount or a missing directory shows.
    async fn probe(&self) -> Result<()> {
        let mut name = [0u8; 16];
        random_bytes(&mut name);
        let path = self
            .root
            .join(".tmp")
            .join(format!("probe-{}", hex::encode(name)));
        let written = async {
            let mut file = tokio::fs::File::create(&path).await?;
            file.write_all(b"probe").await?;
            file.sync_all().await
        }
        .await;
        let _ = tokio::fs::remove_file(&path).await;
        written.map_err(|e| {
            Error::ObjectStore(format!(
                "cannot write under {}: {e}",
                self.root.join(".tmp").display()
            ))
        })
    }

    fn as_local(&self) -> Option<&LocalObjectStore> {
        Some(self)
    }
}
