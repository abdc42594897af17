//! What the app passes to `Uploader.open` (`UploaderOptions` in
//! TypeScript), as the browser client reads it through its serde derive:
//! camelCase, unknown fields refused, every field but the first three
//! optional. The browser client turns it into its own options and fills
//! in the defaults.

use serde::Deserialize;

/// `UploaderOptions`, as the app passes them.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploaderOptions {
    /// The app's server (`""` for the page's origin).
    pub api_base: String,
    /// The event slug.
    pub event: String,
    /// The event's guest code.
    pub guest_code: String,
    /// Transfers at once across all files (and the authorizes they start
    /// with); while every slot is taken, the next files are authorized
    /// ahead, one per transfer on the wire, and confirms go beside them in
    /// as many slots of their own.
    pub concurrency: Option<u32>,
    /// The app's own size limit.
    pub max_file_bytes: Option<u64>,
    /// The app's own allowed types (patterns like `image/*`).
    pub allowed_types: Option<Vec<String>>,
    /// At most this many files in one pick (one `add`).
    pub max_files_per_pick: Option<u32>,
    /// At most this many bytes in one pick, all its files together.
    pub max_pick_bytes: Option<u64>,
    /// Files up to this size are kept in IndexedDB to survive a reload.
    pub keep_file_max_bytes: Option<u64>,
    /// At most this many bytes of files are kept in total.
    pub keep_files_total_bytes: Option<u64>,
    /// A file that goes up in one PUT is hashed whole before its first
    /// byte leaves when it is at most this big (0 turns it off).
    pub hash_file_max_bytes: Option<u64>,
    /// Backoff.
    pub retry: Option<RetryOptions>,
    /// The IndexedDB database name.
    pub db_name: Option<String>,
}

/// `RetryOptions`: the backoff, each field defaulting to
/// [`RetryPolicy::default`](crate::retry::RetryPolicy::default)'s.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryOptions {
    /// The first backoff ceiling, in milliseconds.
    pub base_ms: Option<u64>,
    /// The largest backoff ceiling, in milliseconds.
    pub cap_ms: Option<u64>,
    /// Consecutive retryable failures before `retries_exhausted`.
    pub max_retries: Option<u32>,
}
