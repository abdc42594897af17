//! What is done to an attempt's upload in the object store when the attempt
//! ends early.

use crate::state::Objects;
use crate::store::AttemptRow;

/// Aborts the multipart upload of an attempt just rejected, if it has one
/// (`what` it was, for the log). Best effort: the sweeper deletes a
/// rejected attempt's object and parts in any case.
pub async fn abort_upload(objects: &Objects, a: &AttemptRow, what: &str) {
    if let Some(upload_id) = &a.upload_id {
        if let Err(e) = objects.abort_multipart(&a.object_key, upload_id).await {
            tracing::warn!(attempt = %a.id, error = %e, "could not abort the upload of {what}");
        }
    }
}
