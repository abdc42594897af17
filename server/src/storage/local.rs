//! The embedded object store: files under `<data-dir>/objects/`, written
//! through expiring HMAC-signed URLs that this server answers under
//! `/storage/{key}`.
//!
//! A signed URL binds the object key, content type, exact length, optional
//! SHA-256 and expiry. Bytes are streamed to a temporary file, hashed and
//! counted, then moved into place atomically, so a reader sees either no
//! object or the whole object. Objects are write-once: the same bytes again
//! are accepted (an idempotent repeat), different bytes are refused.
//!
//! Multipart uploads live under `.parts/<upload id>/`: `upload.json` (the
//! content type), and each part as `<n>` with its size and SHA-256 in
//! `<n>.meta`. A part URL binds the key, the upload, the part number, its
//! exact length, optional SHA-256 and expiry; a part is received like an
//! object (temporary file, hashed, fsynced, renamed into place) and is
//! write-once too. Completing checks each part against its recorded length
//! and digest and files the upload's directory, renamed, as the object: its
//! metadata lists the parts, and a read streams them in order. No byte is
//! copied or written again (an object in parts costs its one write, as in
//! S3), and, as for an S3 object assembled from parts, the store knows its
//! composite checksum, not a SHA-256 of the whole. Aborting removes the
//! upload's directory.
//!
//! Locks: moving an object into place, deleting it and completing an upload
//! hold the lock of the object's key; a part's commit holds its upload's
//! lock shared (parts of one upload commit side by side, each under the
//! lock of its number), a complete or an abort exclusively. Each is one of
//! a fixed set, chosen by a hash of the key or the upload id.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::sync::{Mutex, RwLock};
use upload_once_core::ErrorCode;
use upload_once_core::time::{UnixMillis, format_rfc3339};
use upload_once_core::wire::UploadInstruction;

use super::{ListedPart, ObjectBody, ObjectMeta, ObjectStore, PartGrant, PutGrant, percent_encode};
use crate::error::{Error, Result};
use crate::secrets::{Signer, random_bytes};

/// The query parameters of a signed storage URL: an object's (`ct`) or a
/// part's (`upload` and `part`).
#[derive(Clone, Debug, Deserialize, utoipa::IntoParams)]
pub struct SignedQuery {
    /// Content type (an object's URL).
    #[serde(default)]
    pub ct: Option<String>,
    /// The multipart upload (a part's URL).
    #[serde(default)]
    pub upload: Option<String>,
    /// The part number (a part's URL).
    #[serde(default)]
    pub part: Option<u32>,
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
    /// The whole object's SHA-256; absent for an object filed from parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    composite_sha256: Option<String>,
    /// An object filed from parts: the parts' numbers and sizes, in order.
    /// The object's path is then a directory holding each part as `<n>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parts: Vec<(u32, u64)>,
}

impl MetaFile {
    /// The record of an object received whole (not filed from parts).
    fn whole(content_type: &str, received: &Received) -> MetaFile {
        MetaFile {
            size: received.size,
            content_type: content_type.to_owned(),
            sha256: Some(received.sha256.clone()),
            composite_sha256: None,
            parts: Vec::new(),
        }
    }
}

/// A part's record, `<n>.meta` beside its bytes.
#[derive(Serialize, Deserialize)]
struct PartMetaFile {
    size: u64,
    sha256: String,
}

/// A multipart upload's record, `upload.json` in its directory.
#[derive(Serialize, Deserialize)]
struct UploadFile {
    key: String,
    content_type: String,
}

/// What a verified signed URL lets its holder PUT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignedTarget {
    /// The whole object, with this content type.
    Object {
        /// The signed content type.
        content_type: String,
    },
    /// One part of a multipart upload.
    Part {
        /// The upload.
        upload_id: String,
        /// The part number.
        number: u32,
    },
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

/// Whether an upload id is one this store could have made: 32 lowercase hex
/// digits. Nothing else reaches the filesystem.
pub fn is_valid_upload_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn no_such_upload() -> Error {
    Error::problem(ErrorCode::Expired, "this multipart upload is over (completed or aborted)")
}

/// Writes `bytes` to `path` and syncs it to disk.
async fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = crate::private_files::create_file(path).await?;
    file.write_all(bytes).await?;
    file.sync_all().await?;
    Ok(())
}

/// Syncs a directory, so the renames into it survive a power cut.
async fn sync_dir(dir: &Path) {
    if let Ok(dir) = tokio::fs::File::open(dir).await {
        let _ = dir.sync_all().await;
    }
}

fn absent_is_fine(result: io::Result<()>) -> Result<()> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Whether a key is one this server could have generated: lowercase
/// alphanumerics and `-`, segments separated by `/`. Nothing else reaches
/// the filesystem.
pub fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        && key.split('/').all(|seg| {
            !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// Files on local disk, written through signed URLs.
#[derive(Debug)]
pub struct LocalObjectStore {
    root: PathBuf,
    public_base: String,
    signer: Signer,
    /// By key: moving an object into place, deleting it, completing the
    /// upload that files it, so a check of the attempt's state and the move
    /// happen as one step.
    key_locks: Vec<Mutex<()>>,
    /// By upload: shared by its parts' commits, exclusive to end it.
    upload_locks: Vec<RwLock<()>>,
    /// By upload and part number: one commit of a part at a time.
    part_locks: Vec<Mutex<()>>,
}

/// How long an entry under `.tmp` goes unmodified before it is taken for
/// something a crash left there.
pub const TMP_ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes each entry of `dir` (a file, or a directory with what it holds)
/// last modified `idle` or longer ago; how many. An entry that cannot be
/// removed is warned of and left for the next pass: it holds up no other.
fn remove_idle_entries(dir: &Path, idle: std::time::Duration) -> io::Result<u64> {
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(meta) = entry.metadata() else { continue }; // gone meanwhile
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok());
        if age.is_none_or(|age| age < idle) {
            continue;
        }
        let gone =
            if meta.is_dir() { std::fs::remove_dir_all(entry.path()) } else { std::fs::remove_file(entry.path()) };
        match gone {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("could not remove {}: {e}", entry.path().display()),
        }
    }
    Ok(removed)
}

/// How many locks of each kind (a hash picks one).
const LOCK_STRIPES: usize = 64;

fn stripe(of: impl std::hash::Hash) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(of) as usize % LOCK_STRIPES
}

impl LocalObjectStore {
    /// A store under `root`, signing URLs that start with `public_base`.
    ///
    /// What a crash left under `.tmp` long ago is removed first
    /// ([`LocalObjectStore::remove_abandoned_tmp`]).
    pub fn open(root: &Path, public_base: &str, signer: Signer) -> Result<LocalObjectStore> {
        crate::private_files::create_dir_all(&root.join(".tmp"))?;
        crate::private_files::create_dir_all(&root.join(".parts"))?;
        // Housekeeping: a leftover that cannot be removed is warned of, and
        // keeps nothing else from starting.
        match remove_idle_entries(&root.join(".tmp"), TMP_ABANDONED_AFTER) {
            Ok(0) => {}
            Ok(removed) => {
                tracing::info!(removed, "removed what an earlier run left under {}", root.join(".tmp").display())
            }
            Err(e) => tracing::warn!("could not list {}: {e}", root.join(".tmp").display()),
        }
        Ok(LocalObjectStore {
            root: root.to_owned(),
            public_base: public_base.to_owned(),
            signer,
            key_locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            upload_locks: (0..LOCK_STRIPES).map(|_| RwLock::new(())).collect(),
            part_locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
        })
    }

    fn key_lock(&self, key: &str) -> &Mutex<()> {
        &self.key_locks[stripe(key)]
    }

    fn upload_lock(&self, upload_id: &str) -> &RwLock<()> {
        &self.upload_locks[stripe(upload_id)]
    }

    fn part_lock(&self, upload_id: &str, number: u32) -> &Mutex<()> {
        &self.part_locks[stripe((upload_id, number))]
    }

    fn message(key: &str, content_type: &str, size: u64, exp_secs: i64, sha: Option<&str>) -> String {
        format!("PUT\n{key}\n{content_type}\n{size}\n{exp_secs}\n{}", sha.unwrap_or(""))
    }

    fn part_message(key: &str, upload_id: &str, number: u32, size: u64, exp_secs: i64, sha: Option<&str>) -> String {
        format!("PUT-PART\n{key}\n{upload_id}\n{number}\n{size}\n{exp_secs}\n{}", sha.unwrap_or(""))
    }

    fn upload_dir(&self, upload_id: &str) -> PathBuf {
        self.root.join(".parts").join(upload_id)
    }

    fn object_path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    fn meta_path(&self, key: &str) -> PathBuf {
        self.root.join(format!("{key}.meta"))
    }

    /// Checks a signed URL: its parameters (`invalid_query`), the
    /// signature (`bad_signature`), then the expiry (`url_expired`); what
    /// it lets its holder PUT.
    pub fn verify(&self, key: &str, q: &SignedQuery, now: UnixMillis) -> Result<SignedTarget> {
        let (message, target) = match (&q.upload, q.part, &q.ct) {
            (Some(upload_id), Some(number), _) => (
                Self::part_message(key, upload_id, number, q.len, q.exp, q.sha.as_deref()),
                SignedTarget::Part { upload_id: upload_id.clone(), number },
            ),
            (None, None, Some(ct)) => (
                Self::message(key, ct, q.len, q.exp, q.sha.as_deref()),
                SignedTarget::Object { content_type: ct.clone() },
            ),
            _ => {
                return Err(Error::problem(
                    ErrorCode::InvalidQuery,
                    "a storage URL carries `ct` (an object) or `upload` and `part` (a part)",
                ));
            }
        };
        let upload_ok = match &target {
            SignedTarget::Part { upload_id, .. } => is_valid_upload_id(upload_id),
            SignedTarget::Object { .. } => true,
        };
        if !is_valid_key(key) || !upload_ok || !self.signer.verify(&message, &q.sig) {
            return Err(Error::problem(
                ErrorCode::BadSignature,
                "the upload URL's signature does not match its parameters",
            ));
        }
        Self::check_expiry(q, now)?;
        Ok(target)
    }

    /// `url_expired` from `exp` on.
    pub fn check_expiry(q: &SignedQuery, now: UnixMillis) -> Result<()> {
        if q.exp.saturating_mul(1000) <= now {
            return Err(Error::problem(ErrorCode::UrlExpired, "the upload URL has expired; ask for a new one"));
        }
        Ok(())
    }

    /// Streams a body into a temporary file, refusing more than `max` bytes.
    pub async fn receive<S, E>(&self, mut body: S, max: u64) -> Result<Received>
    where
        S: Stream<Item = std::result::Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let path = self.tmp_path("", "");
        let mut file = crate::private_files::create_file(&path).await?;
        let mut received = Received { path, size: 0, sha256: String::new() };
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
    pub async fn commit<F>(&self, key: &str, content_type: &str, received: Received, allow: F) -> Result<Commit>
    where
        F: AsyncFnOnce() -> Result<()>,
    {
        let meta = MetaFile::whole(content_type, &received);
        let _guard = self.key_lock(key).lock().await;
        allow().await?;
        self.commit_locked(key, meta, received).await
    }

    /// [`LocalObjectStore::commit`] with the key's lock held.
    async fn commit_locked(&self, key: &str, meta: MetaFile, received: Received) -> Result<Commit> {
        if let Some(existing) = self.read_meta(key).await? {
            return if existing.sha256.is_some()
                && existing.sha256 == meta.sha256
                && existing.content_type == meta.content_type
            {
                Ok(Commit::AlreadyStored(existing))
            } else {
                Err(Error::problem(ErrorCode::ObjectExists, "different bytes are already stored under this key"))
            };
        }
        let object_path = self.object_path(key);
        if let Some(parent) = object_path.parent() {
            crate::private_files::create_dir_all_async(parent).await?;
        }
        // The metadata lands first; the object's rename is the commit point.
        let meta_tmp = received.path.with_extension("meta");
        // On disk before it is named: a power cut never leaves a confirmed
        // object with empty metadata.
        write_synced(&meta_tmp, &serde_json::to_vec(&meta).unwrap_or_default()).await?;
        tokio::fs::rename(&meta_tmp, self.meta_path(key)).await?;
        tokio::fs::rename(&received.path, &object_path).await?;
        if let Some(parent) = object_path.parent() {
            sync_dir(parent).await;
        }
        Ok(Commit::Stored(Self::to_meta(meta)))
    }

    /// Moves a received part into place, unless `allow` (checked under the
    /// commit lock) says no, the upload is over (`410 expired`), or the part
    /// holds different bytes already (`412 object_exists`). Its SHA-256.
    pub async fn commit_part<F>(&self, upload_id: &str, number: u32, received: Received, allow: F) -> Result<String>
    where
        F: AsyncFnOnce() -> Result<()>,
    {
        if !is_valid_upload_id(upload_id) {
            return Err(no_such_upload());
        }
        let dir = self.upload_dir(upload_id);
        let _upload = self.upload_lock(upload_id).read().await;
        let _part = self.part_lock(upload_id, number).lock().await;
        allow().await?;
        if !tokio::fs::try_exists(dir.join("upload.json")).await? {
            return Err(no_such_upload());
        }
        let part_path = dir.join(number.to_string());
        if tokio::fs::try_exists(&part_path).await? {
            return match self.read_part_meta(&dir, number).await? {
                Some(existing) if existing.sha256 == received.sha256 => Ok(existing.sha256),
                _ => Err(Error::problem(
                    ErrorCode::ObjectExists,
                    format!("different bytes are already stored as part {number}"),
                )),
            };
        }
        // The record first, the part's rename last: a part is never in place
        // without the record of its own bytes.
        let meta = PartMetaFile { size: received.size, sha256: received.sha256.clone() };
        let meta_tmp = received.path.with_extension("meta");
        write_synced(&meta_tmp, &serde_json::to_vec(&meta).unwrap_or_default()).await?;
        tokio::fs::rename(&meta_tmp, dir.join(format!("{number}.meta"))).await?;
        tokio::fs::rename(&received.path, &part_path).await?;
        sync_dir(&dir).await;
        Ok(meta.sha256)
    }

    async fn read_part_meta(&self, dir: &Path, number: u32) -> Result<Option<PartMetaFile>> {
        match tokio::fs::read(dir.join(format!("{number}.meta"))).await {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The ids of the multipart uploads not completed or aborted yet
    /// (checkers and tests).
    pub async fn open_uploads(&self) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        let mut entries = tokio::fs::read_dir(self.root.join(".parts")).await?;
        while let Some(entry) = entries.next_entry().await? {
            ids.push(entry.file_name().to_string_lossy().into_owned());
        }
        ids.sort();
        Ok(ids)
    }

    async fn list_parts_in(&self, upload_id: &str) -> Result<Option<Vec<ListedPart>>> {
        if !is_valid_upload_id(upload_id) {
            return Ok(None);
        }
        let dir = self.upload_dir(upload_id);
        if !tokio::fs::try_exists(dir.join("upload.json")).await? {
            return Ok(None);
        }
        let mut entries = match tokio::fs::read_dir(&dir).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut parts = Vec::new();
        while let Some(entry) = entries.next_entry().await? {
            let Some(number) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let size = match entry.metadata().await {
                Ok(m) => m.len(),
                // Gone since the listing began (an abort): not held.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            };
            let sha256 = self.read_part_meta(&dir, number).await?.filter(|m| m.size == size).map(|m| m.sha256);
            let etag = format!("\"{}\"", sha256.as_deref().unwrap_or_default());
            parts.push(ListedPart { number, size, sha256, etag });
        }
        parts.sort_by_key(|p| p.number);
        Ok(Some(parts))
    }

    /// The parts' digests, in order, after checking each part against the
    /// store's record of it (its length, and the SHA-256 computed and
    /// fsynced with it when it was received).
    async fn check_parts(&self, dir: &Path, parts: &[ListedPart]) -> Result<Vec<String>> {
        let mut digests = Vec::with_capacity(parts.len());
        for part in parts {
            let recorded = self.read_part_meta(dir, part.number).await?;
            let on_disk = tokio::fs::metadata(dir.join(part.number.to_string())).await?.len();
            match recorded {
                Some(r) if r.size == part.size && on_disk == part.size => digests.push(r.sha256),
                _ => {
                    return Err(Error::ObjectStore(format!(
                        "part {} no longer holds the bytes it was stored with",
                        part.number
                    )));
                }
            }
        }
        Ok(digests)
    }

    fn to_meta(m: MetaFile) -> ObjectMeta {
        // S3's ETag of an object from parts ends in `-<count>`; so does this.
        let etag = match (&m.sha256, &m.composite_sha256) {
            (Some(sha), _) => format!("\"{sha}\""),
            (None, Some(composite)) => format!("\"{composite}\""),
            (None, None) => format!("\"{}-{}\"", m.size, m.parts.len()),
        };
        ObjectMeta {
            size: m.size,
            content_type: m.content_type,
            etag,
            sha256: m.sha256,
            composite_sha256: m.composite_sha256,
        }
    }

    async fn read_meta(&self, key: &str) -> Result<Option<ObjectMeta>> {
        Ok(self.read_meta_file(key).await?.map(Self::to_meta))
    }

    /// An object's metadata, if the object is whole: a file of the recorded
    /// size, or a directory of parts (filed by one rename, after its
    /// metadata).
    async fn read_meta_file(&self, key: &str) -> Result<Option<MetaFile>> {
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
        let meta: MetaFile =
            serde_json::from_slice(&bytes).map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidData, e)))?;
        let whole = if object.is_dir() {
            !meta.parts.is_empty() && meta.parts.iter().map(|(_, size)| size).sum::<u64>() == meta.size
        } else {
            meta.parts.is_empty() && meta.size == object.len()
        };
        Ok(whole.then_some(meta))
    }

    /// The files an object's bytes are in, in order, each with its length:
    /// the object's own file, or its parts.
    fn pieces(&self, key: &str, meta: &MetaFile) -> Vec<(PathBuf, u64)> {
        let path = self.object_path(key);
        if meta.parts.is_empty() {
            vec![(path, meta.size)]
        } else {
            meta.parts.iter().map(|(number, size)| (path.join(number.to_string()), *size)).collect()
        }
    }

    /// Bytes `[first, first + len)` of an object laid out in `pieces`, read
    /// 64 KiB at a time, one piece after the other. A piece shorter than
    /// its recorded length ends the stream with an error.
    fn read_pieces(pieces: Vec<(PathBuf, u64)>, first: u64, len: u64) -> ObjectBody {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        // The pieces that hold the range: where to start in each, how much.
        let (mut skip, mut left) = (first, len);
        let mut wanted = Vec::new();
        for (path, size) in pieces {
            if left == 0 {
                break;
            }
            if skip >= size {
                skip -= size;
                continue;
            }
            let take = (size - skip).min(left);
            wanted.push((path, skip, take));
            left -= take;
            skip = 0;
        }
        struct Reading {
            pieces: std::vec::IntoIter<(PathBuf, u64, u64)>,
            /// The piece being read, and how much of it is still to read.
            file: Option<(tokio::fs::File, u64)>,
            failed: bool,
        }
        async fn next_chunk(st: &mut Reading) -> Option<io::Result<Bytes>> {
            loop {
                if st.failed {
                    return None;
                }
                let (file, left) = match &mut st.file {
                    Some((file, left)) if *left > 0 => (file, left),
                    _ => {
                        let (path, offset, take) = st.pieces.next()?;
                        let mut file = match tokio::fs::File::open(&path).await {
                            Ok(file) => file,
                            Err(e) => return Some(Err(e)),
                        };
                        if offset > 0 {
                            if let Err(e) = file.seek(io::SeekFrom::Start(offset)).await {
                                return Some(Err(e));
                            }
                        }
                        st.file = Some((file, take));
                        continue;
                    }
                };
                let mut buf = vec![0u8; (64 * 1024).min(*left as usize)];
                return match file.read(&mut buf).await {
                    Ok(0) => Some(Err(io::Error::from(io::ErrorKind::UnexpectedEof))),
                    Ok(n) => {
                        buf.truncate(n);
                        *left -= n as u64;
                        Some(Ok(Bytes::from(buf)))
                    }
                    Err(e) => Some(Err(e)),
                };
            }
        }
        let state = Reading { pieces: wanted.into_iter(), file: None, failed: false };
        Box::pin(futures_util::stream::unfold(state, |mut st| async move {
            let chunk = next_chunk(&mut st).await?;
            st.failed = chunk.is_err();
            Some((chunk, st))
        }))
    }

    /// An object's bytes: all of them, or the range `[first, last]`.
    async fn read(&self, key: &str, range: Option<(u64, u64)>) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        let Some(meta) = self.read_meta_file(key).await.map_err(unavailable)? else { return Ok(None) };
        // Gone since its metadata was read (a delete): absent.
        let pieces = self.pieces(key, &meta);
        if let Err(e) = tokio::fs::metadata(&pieces[0].0).await {
            return if e.kind() == io::ErrorKind::NotFound { Ok(None) } else { Err(unavailable(e.into())) };
        }
        let (first, len) = match range {
            Some((first, last)) => (first, last.saturating_add(1).saturating_sub(first)),
            None => (0, meta.size),
        };
        Ok(Some((Self::to_meta(meta), Self::read_pieces(pieces, first, len))))
    }

    /// Removes what a crash or a power cut left under `.tmp` (an upload or a
    /// part received but never named, a metadata file never renamed into
    /// place, an object in parts moved out to be deleted): each entry not
    /// modified for `idle` or longer. A write in progress keeps its file's
    /// modification time fresh, and everything else under `.tmp` is renamed
    /// away or removed by the call that made it, within that call. How many
    /// entries were removed.
    pub async fn remove_abandoned_tmp(&self, idle: std::time::Duration) -> Result<u64> {
        let dir = self.root.join(".tmp");
        tokio::task::spawn_blocking(move || remove_idle_entries(&dir, idle))
            .await
            .map_err(|e| Error::ObjectStore(format!("the .tmp sweep stopped: {e}")))?
            .map_err(|e| unavailable(e.into()))
    }

    /// A fresh path under `.tmp`: `prefix`, random hex, `suffix`.
    fn tmp_path(&self, prefix: &str, suffix: &str) -> PathBuf {
        let mut name = [0u8; 16];
        random_bytes(&mut name);
        self.root.join(".tmp").join(format!("{prefix}{}{suffix}", hex::encode(name)))
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
                    // An object filed from parts (its upload's directory).
                    if tokio::fs::try_exists(path.join("upload.json")).await? {
                        if let Ok(rel) = path.strip_prefix(&self.root) {
                            keys.push(rel.to_string_lossy().replace('\\', "/"));
                        }
                    } else {
                        stack.push(path);
                    }
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
        let sig = self.signer.sign(&Self::message(g.key, g.content_type, g.size, exp_secs, g.sha256));
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
        UploadInstruction { method: "PUT".to_owned(), url, headers, expires_at: format_rfc3339(exp_secs * 1000) }
    }

    async fn create_multipart(&self, key: &str, content_type: &str) -> Result<String> {
        let mut id = [0u8; 16];
        random_bytes(&mut id);
        let id = hex::encode(id);
        // Made whole under .tmp, then named: an upload directory always has
        // its record.
        let tmp = self.root.join(".tmp").join(format!("upload-{id}"));
        let made = async {
            crate::private_files::create_dir(&tmp).await?;
            let record = UploadFile { key: key.to_owned(), content_type: content_type.to_owned() };
            write_synced(&tmp.join("upload.json"), &serde_json::to_vec(&record).unwrap_or_default()).await?;
            tokio::fs::rename(&tmp, self.upload_dir(&id)).await?;
            sync_dir(&self.root.join(".parts")).await;
            Ok::<_, Error>(())
        }
        .await;
        if let Err(e) = made {
            let _ = tokio::fs::remove_dir_all(&tmp).await;
            return Err(unavailable(e));
        }
        Ok(id)
    }

    fn presign_part(&self, g: &PartGrant<'_>) -> UploadInstruction {
        let exp_secs = g.expires_at.div_euclid(1000);
        let sig = self.signer.sign(&Self::part_message(g.key, g.upload_id, g.number, g.size, exp_secs, g.sha256));
        let mut url = format!(
            "{}/storage/{}?upload={}&part={}&len={}&exp={}",
            self.public_base, g.key, g.upload_id, g.number, g.size, exp_secs
        );
        if let Some(sha) = g.sha256 {
            url.push_str("&sha=");
            url.push_str(sha);
        }
        url.push_str("&sig=");
        url.push_str(&sig);
        UploadInstruction {
            method: "PUT".to_owned(),
            url,
            headers: BTreeMap::new(),
            expires_at: format_rfc3339(exp_secs * 1000),
        }
    }

    async fn list_parts(&self, _key: &str, upload_id: &str) -> Result<Option<Vec<ListedPart>>> {
        self.list_parts_in(upload_id).await.map_err(unavailable)
    }

    /// Idempotent: an object already filed is kept, and what is left of
    /// its upload removed. The upload's directory becomes the object: its
    /// metadata (listing the parts) lands first, the directory's rename is
    /// the commit point, and no byte is copied.
    async fn complete_multipart(&self, key: &str, upload_id: &str, parts: &[ListedPart]) -> Result<()> {
        if !is_valid_key(key) || !is_valid_upload_id(upload_id) {
            return Err(Error::ObjectStore(format!("no upload {upload_id} for {key}")));
        }
        let dir = self.upload_dir(upload_id);
        let _upload = self.upload_lock(upload_id).write().await;
        let _key = self.key_lock(key).lock().await;
        let done = async {
            if self.read_meta(key).await?.is_some() {
                // Filed before (the answer was lost): what is left goes.
                absent_is_fine(tokio::fs::remove_dir_all(&dir).await)?;
                sync_dir(&self.root.join(".parts")).await;
                return Ok(());
            }
            let record: UploadFile = match tokio::fs::read(dir.join("upload.json")).await {
                Ok(bytes) => serde_json::from_slice(&bytes)
                    .map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidData, e)))?,
                // Aborted (its attempt is over, and its object may be
                // deleted already): not completed.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(Error::ObjectStore(format!("upload {upload_id} for {key} was aborted")));
                }
                Err(e) => return Err(e.into()),
            };
            if record.key != key {
                return Err(Error::ObjectStore(format!("upload {upload_id} is not for {key}")));
            }
            let digests = self.check_parts(&dir, parts).await?;
            let meta = MetaFile {
                size: parts.iter().map(|p| p.size).sum(),
                content_type: record.content_type,
                sha256: None,
                composite_sha256: crate::rules::multipart::composite_sha256(digests.iter().map(|d| Some(d.as_str()))),
                parts: parts.iter().map(|p| (p.number, p.size)).collect(),
            };
            let object_path = self.object_path(key);
            if let Some(parent) = object_path.parent() {
                crate::private_files::create_dir_all_async(parent).await?;
            }
            // A leftover of a delete cut short: no longer an object.
            absent_is_fine(tokio::fs::remove_file(&object_path).await)?;
            let meta_tmp = self.tmp_path("", ".meta");
            write_synced(&meta_tmp, &serde_json::to_vec(&meta).unwrap_or_default()).await?;
            tokio::fs::rename(&meta_tmp, self.meta_path(key)).await?;
            tokio::fs::rename(&dir, &object_path).await?;
            if let Some(parent) = object_path.parent() {
                sync_dir(parent).await;
            }
            sync_dir(&self.root.join(".parts")).await;
            Ok(())
        }
        .await;
        done.map_err(unavailable)
    }

    async fn abort_multipart(&self, _key: &str, upload_id: &str) -> Result<()> {
        if !is_valid_upload_id(upload_id) {
            return Ok(());
        }
        let _upload = self.upload_lock(upload_id).write().await;
        absent_is_fine(tokio::fs::remove_dir_all(self.upload_dir(upload_id)).await).map_err(unavailable)?;
        sync_dir(&self.root.join(".parts")).await;
        Ok(())
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>> {
        self.read_meta(key).await.map_err(unavailable)
    }

    async fn get(&self, key: &str) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        self.read(key, None).await
    }

    async fn get_range(&self, key: &str, first: u64, last: u64) -> Result<Option<(ObjectMeta, ObjectBody)>> {
        self.read(key, Some((first, last))).await
    }

    async fn put(&self, key: &str, content_type: &str, bytes: Bytes) -> Result<ObjectMeta> {
        let size = bytes.len() as u64;
        self.put_stream(key, content_type, futures_util::stream::iter([Ok::<_, io::Error>(bytes)]), size).await
    }

    async fn put_file(&self, key: &str, content_type: &str, path: &Path) -> Result<ObjectMeta> {
        let file = tokio::fs::File::open(path).await?;
        let size = file.metadata().await?.len();
        self.put_stream(key, content_type, super::file_chunks(file), size).await
    }

    fn presign_get(&self, _key: &str, _expires_at: UnixMillis, _answer: &super::GetAnswer<'_>) -> Option<String> {
        None
    }

    async fn delete(&self, key: &str) -> Result<()> {
        if !is_valid_key(key) {
            return Ok(());
        }
        let _guard = self.key_lock(key).lock().await;
        let object_path = self.object_path(key);
        let removed = async {
            if tokio::fs::metadata(&object_path).await.is_ok_and(|m| m.is_dir()) {
                // An object in parts: out of its place in one rename, then
                // removed (a power cut in between leaves it under .tmp).
                let trash = self.tmp_path("deleted-", "");
                absent_is_fine(tokio::fs::rename(&object_path, &trash).await)?;
                absent_is_fine(tokio::fs::remove_file(self.meta_path(key)).await)?;
                absent_is_fine(tokio::fs::remove_dir_all(&trash).await)
            } else {
                absent_is_fine(tokio::fs::remove_file(&object_path).await)?;
                absent_is_fine(tokio::fs::remove_file(self.meta_path(key)).await)
            }
        };
        removed.await.map_err(unavailable)
    }

    async fn list(&self) -> Result<Vec<String>> {
        self.list_keys().await.map_err(unavailable)
    }

    /// Writes, syncs and removes a small file where uploads are received,
    /// so a full disk, a read-only mount or a missing directory shows.
    async fn probe(&self) -> Result<()> {
        let path = self.tmp_path("probe-", "");
        let written = async {
            let mut file = crate::private_files::create_file(&path).await?;
            file.write_all(b"probe").await?;
            file.sync_all().await
        }
        .await;
        let _ = tokio::fs::remove_file(&path).await;
        written.map_err(|e| Error::ObjectStore(format!("cannot write under {}: {e}", self.root.join(".tmp").display())))
    }
}

impl LocalObjectStore {
    /// Stores `size` bytes from `body` under `key`, replacing what is there.
    async fn put_stream<S, E>(&self, key: &str, content_type: &str, body: S, size: u64) -> Result<ObjectMeta>
    where
        S: Stream<Item = std::result::Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        if !is_valid_key(key) {
            return Err(Error::Io(io::Error::new(io::ErrorKind::InvalidInput, format!("not an object key: {key}"))));
        }
        let received = self.receive(body, size).await.map_err(unavailable)?;
        let meta = MetaFile::whole(content_type, &received);
        let _guard = self.key_lock(key).lock().await;
        // Replaced, not refused: the old object stays whole until the rename.
        let object_path = self.object_path(key);
        if let Some(parent) = object_path.parent() {
            crate::private_files::create_dir_all_async(parent).await.map_err(|e| unavailable(e.into()))?;
        }
        let meta_tmp = received.path.with_extension("meta");
        write_synced(&meta_tmp, &serde_json::to_vec(&meta).unwrap_or_default()).await.map_err(unavailable)?;
        // The object first, then its metadata: a reader between the two sees
        // a size that does not match, which reads as absent (never a mix).
        tokio::fs::rename(&received.path, &object_path).await.map_err(|e| unavailable(e.into()))?;
        tokio::fs::rename(&meta_tmp, self.meta_path(key)).await.map_err(|e| unavailable(e.into()))?;
        if let Some(parent) = object_path.parent() {
            sync_dir(parent).await;
        }
        Ok(Self::to_meta(meta))
    }
}
