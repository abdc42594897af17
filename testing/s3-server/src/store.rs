//! s3s-fs with its checksums and multipart uploads made to behave like
//! S3's, where the reference server relies on S3's behaviour:
//!
//! - `PutObject` verifies `x-amz-checksum-sha256` against the body before
//!   the object is filed (`400 BadDigest`, nothing stored); s3s-fs moves the
//!   body into place first and compares after, so a refused PUT left its
//!   bytes under the key.
//! - `UploadPart` verifies `x-amz-checksum-sha256` against the body before
//!   the part is stored (`400 BadDigest`); s3s-fs ignores it.
//! - An upload that was never made, or is completed or aborted, is `404
//!   NoSuchUpload` for `UploadPart`, `ListParts`, `CompleteMultipartUpload`
//!   and `AbortMultipartUpload`; s3s-fs answers `403 AccessDenied`, or lists
//!   whatever part files are left.
//! - `ListParts` gives each part's ETag and, when the part was sent with
//!   one, its `ChecksumSHA256`, in part order, a page at a time
//!   (`max-parts`, at most 1000, and `part-number-marker`); s3s-fs gives
//!   neither, in directory order, all at once.
//! - `CompleteMultipartUpload` refuses a part that is not stored, or whose
//!   ETag or checksum differs (`400 InvalidPart`), and one under 5 MiB but
//!   the last (`400 EntityTooSmall`), before anything changes; s3s-fs drops
//!   the upload first and fails halfway.
//! - A part is filed under its upload's lock, which a complete and an abort
//!   hold too: a part whose request was in flight during an abort is
//!   refused, never left behind.
//!
//! Everything else is s3s-fs as it is.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures_util::StreamExt;
use s3s::dto::*;
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};
use s3s_fs::FileSystem;
use sha2::{Digest, Sha256};

/// The smallest part S3 assembles, but for the last.
const MIN_PART: u64 = 5 * 1024 * 1024;

/// The most parts a `ListParts` page holds.
const MAX_PAGE: i32 = 1000;

/// The test store.
pub struct Store {
    fs: FileSystem,
    root: PathBuf,
    uploads: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A part being filed: dropped before it is disarmed (`mem::forget`), it
/// removes the part's file and record, so no half-filed part is listed.
struct Unfiled {
    files: [PathBuf; 2],
}

impl Drop for Unfiled {
    fn drop(&mut self) {
        for file in &self.files {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// What is kept of a stored part beside s3s-fs's file.
struct PartRecord {
    etag: String,
    checksum_sha256: Option<String>,
}

impl Store {
    /// s3s-fs over `root`.
    pub fn new(root: PathBuf) -> Result<Store, String> {
        let fs = FileSystem::new(&root).map_err(|e| format!("{}: {e:?}", root.display()))?;
        let root = std::fs::canonicalize(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        Ok(Store { fs, root, uploads: Mutex::new(HashMap::new()) })
    }

    /// The lock of one upload.
    fn lock_of(&self, upload_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.uploads.lock().expect("upload locks").entry(upload_id.to_owned()).or_default().clone()
    }

    /// `NoSuchUpload` unless s3s-fs holds this upload.
    fn require_upload(&self, upload_id: &str) -> S3Result<()> {
        let well_formed = upload_id.len() == 36 && upload_id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
        if well_formed && self.root.join(format!(".upload-{upload_id}.json")).is_file() {
            Ok(())
        } else {
            Err(s3_error!(NoSuchUpload, "The specified upload does not exist."))
        }
    }

    /// s3s-fs's file of a part.
    fn part_file(&self, upload_id: &str, number: i32) -> PathBuf {
        self.root.join(format!(".upload_id-{upload_id}.part-{number}"))
    }

    /// Where this layer keeps a part's ETag and checksum (a name s3s-fs
    /// never lists).
    fn record_file(&self, upload_id: &str, number: i32) -> PathBuf {
        self.root.join(format!(".uo-part-{upload_id}-{number}"))
    }

    fn write_record(&self, upload_id: &str, number: i32, record: &PartRecord) -> S3Result<()> {
        let text = format!("{}\n{}", record.etag, record.checksum_sha256.as_deref().unwrap_or(""));
        std::fs::write(self.record_file(upload_id, number), text).map_err(|e| s3_error!(e, InternalError))
    }

    fn read_record(&self, upload_id: &str, number: i32) -> Option<PartRecord> {
        let text = std::fs::read_to_string(self.record_file(upload_id, number)).ok()?;
        let (etag, checksum) = text.split_once('\n')?;
        Some(PartRecord { etag: etag.to_owned(), checksum_sha256: Some(checksum.to_owned()).filter(|c| !c.is_empty()) })
    }

    fn remove_records(&self, upload_id: &str) {
        let prefix = format!(".uo-part-{upload_id}-");
        if let Ok(entries) = std::fs::read_dir(&self.root) {
            for entry in entries.flatten() {
                if entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl S3 for Store {
    async fn upload_part(&self, mut req: S3Request<UploadPartInput>) -> S3Result<S3Response<UploadPartOutput>> {
        let (upload_id, number) = (req.input.upload_id.clone(), req.input.part_number);
        self.require_upload(&upload_id)?;
        let mut body = req.input.body.take().ok_or_else(|| s3_error!(IncompleteBody))?;
        let mut bytes = Vec::new();
        while let Some(chunk) = body.next().await {
            bytes.extend_from_slice(&chunk.map_err(|_| s3_error!(IncompleteBody))?);
        }
        let checksum = STANDARD.encode(Sha256::digest(&bytes));
        if req.input.checksum_sha256.as_ref().is_some_and(|sent| *sent != checksum) {
            return Err(s3_error!(BadDigest, "The SHA256 you specified did not match the calculated checksum."));
        }
        let lock = self.lock_of(&upload_id);
        let _filing = lock.lock().await;
        // Completed or aborted while the body came in: not filed.
        self.require_upload(&upload_id)?;
        let sent_checksum = req.input.checksum_sha256.is_some().then_some(checksum);
        req.input.body = Some(StreamingBlob::from(s3s::Body::from(bytes)));
        // Filed with its record, or not at all: a request whose client goes
        // away (a page reloaded) is dropped wherever it is, and a part file
        // left without its record would be listed (without its checksum)
        // yet refused by the complete for ever. S3 files a part atomically.
        let unfiled = Unfiled { files: [self.part_file(&upload_id, number), self.record_file(&upload_id, number)] };
        let mut response = self.fs.upload_part(req).await?;
        let etag = response.output.e_tag.as_ref().map(|e| e.value().to_owned()).unwrap_or_default();
        self.write_record(&upload_id, number, &PartRecord { etag, checksum_sha256: sent_checksum.clone() })?;
        std::mem::forget(unfiled);
        response.output.checksum_sha256 = sent_checksum;
        Ok(response)
    }

    async fn list_parts(&self, req: S3Request<ListPartsInput>) -> S3Result<S3Response<ListPartsOutput>> {
        let upload_id = req.input.upload_id.clone();
        self.require_upload(&upload_id)?;
        let max = req.input.max_parts.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
        let marker = req.input.part_number_marker.unwrap_or(0);
        let mut response = self.fs.list_parts(req).await?;
        let mut parts: Vec<Part> = response.output.parts.take().unwrap_or_default();
        parts.retain(|p| p.part_number.is_some_and(|n| n > marker));
        parts.sort_by_key(|p| p.part_number);
        let truncated = parts.len() > max as usize;
        parts.truncate(max as usize);
        for part in &mut parts {
            if let Some(record) = part.part_number.and_then(|n| self.read_record(&upload_id, n)) {
                part.e_tag = Some(ETag::Strong(record.etag));
                part.checksum_sha256 = record.checksum_sha256;
            }
        }
        let output = &mut response.output;
        output.max_parts = Some(max);
        output.part_number_marker = Some(marker);
        output.is_truncated = Some(truncated);
        output.next_part_number_marker = if truncated { parts.last().and_then(|p| p.part_number) } else { None };
        output.parts = Some(parts);
        Ok(response)
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let upload_id = req.input.upload_id.clone();
        let lock = self.lock_of(&upload_id);
        let _filing = lock.lock().await;
        self.require_upload(&upload_id)?;
        let given = req.input.multipart_upload.as_ref().and_then(|m| m.parts.as_ref()).cloned().unwrap_or_default();
        for (i, part) in given.iter().enumerate() {
            let number = part.part_number.ok_or_else(|| s3_error!(InvalidPart, "a part without its number"))?;
            let record = self.read_record(&upload_id, number);
            let size = std::fs::metadata(self.part_file(&upload_id, number)).map(|m| m.len()).ok();
            let (Some(record), Some(size)) = (record, size) else {
                return Err(s3_error!(InvalidPart, "part {number} was not uploaded"));
            };
            if part.e_tag.as_ref().is_some_and(|e| e.value() != record.etag) {
                return Err(s3_error!(InvalidPart, "the ETag of part {number} does not match"));
            }
            if part.checksum_sha256.is_some() && part.checksum_sha256 != record.checksum_sha256 {
                return Err(s3_error!(InvalidPart, "the checksum of part {number} does not match"));
            }
            if i + 1 < given.len() && size < MIN_PART {
                return Err(s3_error!(EntityTooSmall, "part {number} is smaller than 5 MiB"));
            }
        }
        let response = self.fs.complete_multipart_upload(req).await?;
        self.remove_records(&upload_id);
        Ok(response)
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let upload_id = req.input.upload_id.clone();
        let lock = self.lock_of(&upload_id);
        let _filing = lock.lock().await;
        self.require_upload(&upload_id)?;
        let response = self.fs.abort_multipart_upload(req).await?;
        self.remove_records(&upload_id);
        Ok(response)
    }

    async fn put_object(&self, mut req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let Some(sent) = req.input.checksum_sha256.clone() else { return self.fs.put_object(req).await };
        let mut body = req.input.body.take().ok_or_else(|| s3_error!(IncompleteBody))?;
        let mut bytes = Vec::new();
        while let Some(chunk) = body.next().await {
            bytes.extend_from_slice(&chunk.map_err(|_| s3_error!(IncompleteBody))?);
        }
        if STANDARD.encode(Sha256::digest(&bytes)) != sent {
            return Err(s3_error!(BadDigest, "The sha256 you specified did not match the calculated checksum."));
        }
        req.input.body = Some(StreamingBlob::from(s3s::Body::from(bytes)));
        self.fs.put_object(req).await
    }

    // --- s3s-fs as it is ---------------------------------------------------

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.fs.create_multipart_upload(req).await
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        self.fs.upload_part_copy(req).await
    }

    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        self.fs.create_bucket(req).await
    }

    async fn copy_object(&self, req: S3Request<CopyObjectInput>) -> S3Result<S3Response<CopyObjectOutput>> {
        self.fs.copy_object(req).await
    }

    async fn delete_bucket(&self, req: S3Request<DeleteBucketInput>) -> S3Result<S3Response<DeleteBucketOutput>> {
        self.fs.delete_bucket(req).await
    }

    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.fs.delete_object(req).await
    }

    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        self.fs.delete_objects(req).await
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.fs.get_bucket_location(req).await
    }

    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        self.fs.get_object(req).await
    }

    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.fs.head_bucket(req).await
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        self.fs.head_object(req).await
    }

    async fn list_buckets(&self, req: S3Request<ListBucketsInput>) -> S3Result<S3Response<ListBucketsOutput>> {
        self.fs.list_buckets(req).await
    }

    async fn list_objects(&self, req: S3Request<ListObjectsInput>) -> S3Result<S3Response<ListObjectsOutput>> {
        self.fs.list_objects(req).await
    }

    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        self.fs.list_objects_v2(req).await
    }
}
