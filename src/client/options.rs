//! The uploader's options, as the client takes them, and its network
//! adapters.

use std::rc::Rc;

use upload_once_core::page::PageConfig;
use upload_once_core::restrictions::{PickLimits, Restrictions};
use upload_once_core::retry::RetryPolicy;

use crate::error::{Error, Result};
use crate::transport::{Api, HttpApi, Transport, XhrTransport};

/// Client options (`UploaderOptions` in TypeScript).
#[derive(Clone, Debug)]
pub struct Options {
    /// The app's API base URL, e.g. `https://photos.example`.
    pub api_base: String,
    /// The event slug.
    pub event: String,
    /// The event's guest code.
    pub guest_code: String,
    /// How many requests run at once across all files (default 3).
    pub concurrency: usize,
    /// The app's own restrictions, checked with the event's before any
    /// network.
    pub restrictions: Restrictions,
    /// The app's caps on one pick (`maxFilesPerPick`, `maxPickBytes`),
    /// checked before anything of it is recorded.
    pub pick_limits: PickLimits,
    /// Files up to this size are kept in IndexedDB so an upload survives a
    /// reload (default 64 MiB: phone photos and short clips; a bigger file
    /// is picked again after a reload rather than copied while it uploads).
    pub keep_file_max_bytes: u64,
    /// At most this many bytes of files are kept in total (default 512 MiB).
    pub keep_files_total_bytes: u64,
    /// A file that goes up in one PUT is hashed whole (SHA-256) before its
    /// first byte leaves when it is at most this big (default 64 MiB; never
    /// above the server's multipart threshold): the server then finds the
    /// same photo already shared, and refuses bytes that changed since the
    /// pick. 0 turns it off. The file is read into memory once to hash it.
    pub hash_file_max_bytes: u64,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// The IndexedDB database name (default `upload-once`).
    pub db_name: String,
}

impl Options {
    /// Options with defaults for everything optional.
    pub fn new(api_base: &str, event: &str, guest_code: &str) -> Options {
        Options {
            api_base: api_base.trim_end_matches('/').to_owned(),
            event: event.to_owned(),
            guest_code: guest_code.to_owned(),
            concurrency: 3,
            restrictions: Restrictions::default(),
            pick_limits: PickLimits::default(),
            keep_file_max_bytes: 64 << 20,
            keep_files_total_bytes: 512 << 20,
            hash_file_max_bytes: upload_once_core::scheduler::DEFAULT_HASH_LIMIT,
            retry: RetryPolicy::default(),
            db_name: "upload-once".to_owned(),
        }
    }

    pub(super) fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidOptions(m.to_owned()));
        let is_url_or_path = ["http://", "https://", "/"].iter().any(|start| self.api_base.starts_with(start));
        if !is_url_or_path && !self.api_base.is_empty() {
            return bad("apiBase must be an http(s) URL or a path");
        }
        if self.event.is_empty() {
            return bad("event is required");
        }
        if self.guest_code.is_empty() {
            return bad("guestCode is required");
        }
        if !(1..=16).contains(&self.concurrency) {
            return bad("concurrency must be between 1 and 16");
        }
        if self.retry.base_ms == 0 || self.retry.cap_ms < self.retry.base_ms {
            return bad("retry.baseMs must be positive and retry.capMs at least retry.baseMs");
        }
        if self.pick_limits.max_files == Some(0) || self.pick_limits.max_bytes == Some(0) {
            return bad("maxFilesPerPick and maxPickBytes must be at least 1");
        }
        if self.db_name.is_empty() {
            return bad("dbName must not be empty");
        }
        Ok(())
    }

    pub(super) fn page_config(&self) -> PageConfig {
        PageConfig {
            event: self.event.clone(),
            policy: self.retry,
            concurrency: self.concurrency,
            restrictions: self.restrictions.clone(),
            pick_limits: self.pick_limits,
            keep_file_max_bytes: self.keep_file_max_bytes,
            keep_files_total_bytes: self.keep_files_total_bytes,
            hash_file_max_bytes: self.hash_file_max_bytes,
        }
    }
}

/// The network adapters (seams for tests).
#[derive(Clone)]
pub struct Adapters {
    /// The app's API.
    pub api: Rc<dyn Api>,
    /// The byte transfer.
    pub transport: Rc<dyn Transport>,
}

impl Adapters {
    /// gloo-net for the API, XMLHttpRequest for the bytes.
    pub fn browser(options: &Options) -> Adapters {
        Adapters {
            api: Rc::new(HttpApi::new(&options.api_base, &options.event)),
            transport: Rc::new(XhrTransport::default()),
        }
    }
}
