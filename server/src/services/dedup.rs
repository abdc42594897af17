//! The same photo is stored once per scope: the content identity beside
//! the attempt id (issue 19, docs/protocol.md §3.14).
//!
//! An event's `dedup` setting decides where the server looks for the same
//! bytes already stored: nowhere (`none`), in the same guest session
//! (`guest`) or anywhere in the event (`event`, the default for new
//! events). The record store keeps a content index per scope (content key →
//! media, unique), written in the transaction that creates the media.
//!
//! The content key is what the store verified, never a claim alone: the
//! SHA-256 of a single PUT's object (the embedded store computes it while
//! it writes; S3 verifies the `x-amz-checksum-sha256` the URL was signed
//! with), or the composite checksum of a multipart object (the parts'
//! digests, each verified by the store).
//!
//! The rules (where bytes are indexed, what is a duplicate) are
//! [`crate::rules::dedup`]; the hooks, each called from one place:
//! - [`crate::rules::dedup::authorize_entry`]: an authorize whose `sha256` is indexed in scope,
//!   for a file of the same size and content type, creates the attempt
//!   already confirmed, as a duplicate of that media: no upload instruction,
//!   no object, nothing to sweep, and no bytes counted against the quotas.
//!   What the guest is then told of that media is only what it already has
//!   ([`crate::state::AppState::media_for_guest`]).
//! - [`confirm`]: the media record is created and indexed, or, when the
//!   scope already has those bytes (a race, or a multipart file whose
//!   composite is only known now), the attempt becomes a duplicate and its
//!   object is deleted.
//! - [`sweep`]: a duplicate's object is deleted again once no URL of its
//!   attempt can work (S3 cannot refuse a presigned PUT that arrives late).

use crate::error::Result;
use crate::metrics::ConfirmOutcome;
use crate::rules::dedup::entry;
use crate::state::{AppState, Objects};
use crate::store::{AttemptLock, EventRow, MediaRow, NewMedia};

/// The confirm hook, under the attempt's row lock: creates the media record
/// (indexed under `content_key` when the event deduplicates), or confirms
/// the attempt as a duplicate of the media already holding these bytes and
/// deletes its object.
pub async fn confirm(
    objects: &Objects,
    event: &EventRow,
    lock: Box<dyn AttemptLock>,
    media: NewMedia,
    content_key: Option<&str>,
) -> Result<(MediaRow, ConfirmOutcome)> {
    let a = lock.attempt().clone();
    let Some(entry) = entry(event, a.session_id, content_key) else {
        return Ok((lock.confirm(media).await?, ConfirmOutcome::Created));
    };
    let (media, duplicate) = lock.confirm_indexed(media, &entry).await?;
    if !duplicate {
        return Ok((media, ConfirmOutcome::Created));
    }
    // Committed: nothing of this attempt is kept. A failure here leaves the
    // object to the sweeper.
    if let Err(e) = objects.delete(&a.object_key).await {
        tracing::warn!(key = %a.object_key, "a duplicate's object could not be deleted yet: {e}");
    }
    Ok((media, ConfirmOutcome::Deduplicated))
}

/// The sweeper's pass over duplicates found at confirm: once an attempt is
/// past its expiry (no URL of it works), its object (and multipart upload)
/// is deleted for good and recorded so. How many.
pub async fn sweep(state: &AppState, limit: u32) -> Result<u64> {
    let mut deleted = 0;
    for a in state.records.duplicate_objects(state.now(), limit).await? {
        if let Some(upload_id) = &a.upload_id {
            if let Err(e) = state.objects.abort_multipart(&a.object_key, upload_id).await {
                tracing::warn!(key = %a.object_key, "sweep: could not abort a duplicate's upload: {e}");
                continue;
            }
        }
        if let Err(e) = state.objects.delete(&a.object_key).await {
            tracing::warn!(key = %a.object_key, "sweep: could not delete a duplicate's object: {e}");
            continue;
        }
        state.records.mark_object_deleted(a.row_id).await?;
        deleted += 1;
    }
    Ok(deleted)
}
