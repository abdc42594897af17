//! What JS sees of an attempt: the three state axes apart, progress, the
//! media record and the last error (`AttemptView` in the TypeScript types).

use serde::Serialize;
use upload_once_core::attempt::{AttemptError, AttemptRecord, Confirmation, ModerationView, Transfer};
use upload_once_core::wire::MediaSummary;

/// One attempt as shown to the app.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView<'a> {
    /// Attempt id.
    pub id: String,
    /// Event slug.
    pub event: &'a str,
    /// File name.
    pub file_name: &'a str,
    /// Size in bytes.
    pub size: u64,
    /// Content type.
    #[serde(rename = "type")]
    pub content_type: &'a str,
    /// `File.lastModified`.
    pub last_modified: i64,
    /// Object key once authorized.
    pub object_key: Option<&'a str>,
    /// Transfer axis.
    pub transfer: Transfer,
    /// Bytes sent in the current transfer.
    pub bytes_sent: f64,
    /// Bytes to send.
    pub bytes_total: f64,
    /// Confirmation axis.
    pub confirmation: Confirmation,
    /// Moderation axis.
    pub moderation: ModerationView,
    /// The media record once confirmed.
    pub media: Option<&'a MediaSummary>,
    /// Last error.
    pub error: Option<&'a AttemptError>,
    /// Consecutive retries.
    pub retries: u32,
    /// When the next retry starts.
    pub next_retry_at: Option<i64>,
    /// When the guest picked the file.
    pub created_at: i64,
    /// When the record last changed.
    pub updated_at: i64,
    /// The expired attempt this one continues.
    pub replaces: Option<String>,
    /// The attempt continuing this expired one.
    pub replaced_by: Option<String>,
    /// Whether nothing more will happen by itself.
    pub terminal: bool,
    /// Whether this page uploads it (holds its lock).
    pub driven_here: bool,
    /// Whether the file's bytes are available here.
    pub file_held: bool,
    /// Whether it waits for the browser to come back online.
    pub paused: bool,
}

impl<'a> AttemptView<'a> {
    /// The view of a record.
    pub fn of(r: &'a AttemptRecord, progress: Option<(f64, f64)>, driven_here: bool, file_held: bool, online: bool) -> Self {
        let total = r.file.size as f64;
        let (sent, total) = match (r.transfer, progress) {
            (Transfer::Uploaded, _) => (total, total),
            (Transfer::Uploading, Some(p)) => p,
            _ => (0.0, total),
        };
        AttemptView {
            id: r.id.to_string(),
            event: &r.event,
            file_name: &r.file.name,
            size: r.file.size,
            content_type: &r.file.content_type,
            last_modified: r.file.last_modified,
            object_key: r.object_key.as_deref(),
            transfer: r.transfer,
            bytes_sent: sent,
            bytes_total: total,
            confirmation: r.confirmation,
            moderation: r.moderation,
            media: r.media.as_ref(),
            error: r.error.as_ref(),
            retries: r.retries,
            next_retry_at: r.next_retry_at,
            created_at: r.created_at,
            updated_at: r.updated_at,
            replaces: r.replaces.map(|u| u.to_string()),
            replaced_by: r.replaced_by.map(|u| u.to_string()),
            terminal: r.is_terminal(),
            driven_here,
            file_held,
            paused: !online && !r.is_terminal() && !r.needs_file(),
        }
    }
}
