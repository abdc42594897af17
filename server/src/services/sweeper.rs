//! The sweeper: expires attempts that were not confirmed within the
//! attempt TTL, deletes their objects and aborts their multipart uploads (no
//! part is left behind).
//!
//! It never deletes the object of a confirmed attempt, even while a confirm
//! is in flight: each attempt is expired under the same row lock confirm
//! holds, and re-read under it, so a confirm that got there first wins and
//! the sweeper leaves its object alone. Objects are deleted only after the
//! attempt is durably `expired` (or `rejected`), and a confirm of such an
//! attempt answers 410 — so there is never a media row without its object.
//!
//! Takedowns (issue 15): a media the host rejected, and left rejected for
//! `--rejected-retention`, is first marked removed (no approval brings it
//! back after that, and its links answer `410 removed` for everyone, its host
//! too), then its original and renditions are deleted. An event its host
//! deleted whose objects could not all be deleted at once is finished here:
//! its objects, then its rows. Once its last signed URL has expired, each
//! of its objects is deleted once more (a PUT through a URL handed out
//! before the deletion, straight to S3, or a rendition worker that was
//! already running, may have written one since).

use std::time::Duration;

use serde::Serialize;
use upload_once_core::wire::AttemptState;

use crate::error::Result;
use crate::state::AppState;

/// How many attempts one pass handles at most.
const BATCH: u32 = 500;

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SweepReport {
    /// Attempts marked expired.
    pub expired: u64,
    /// Objects of expired or rejected attempts removed (or found already
    /// absent), their multipart uploads aborted.
    pub objects_deleted: u64,
    /// Objects (or multipart uploads) the store refused to delete (abort)
    /// this pass: each is tried again on the next one, and held up nothing
    /// else.
    pub objects_refused: u64,
    /// Media rejected past the retention, marked removed.
    pub media_removed: u64,
    /// Removed media whose original and renditions were deleted.
    pub media_objects_deleted: u64,
    /// Bulk decisions whose instance stopped mid-way, taken up again.
    pub bulk_resumed: u64,
    /// Deleted events whose objects and rows were removed.
    pub events_purged: u64,
    /// Objects of deleted events deleted once more after their last signed
    /// URL expired (a late PUT, a late rendition), or found absent.
    pub late_objects_deleted: u64,
    /// What a crash left under the embedded store's `.tmp` (untouched for an
    /// hour), removed.
    pub tmp_entries_removed: u64,
    /// Records of attempts that ended without a media, deleted after the
    /// record retention.
    pub attempts_forgotten: u64,
    /// Lapsed guest sessions with no attempt left, deleted after the record
    /// retention.
    pub sessions_forgotten: u64,
}

/// One sweep: expire what is due, then delete dead objects.
pub async fn sweep_once(state: &AppState) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    let now = state.now();
    for row_id in state.records.expired_attempts(now, BATCH).await? {
        let Some(lock) = state.records.lock_attempt_row(row_id).await? else {
            continue;
        };
        let a = lock.attempt();
        if a.state == AttemptState::Authorized && a.expires_at <= now {
            lock.expire().await?;
            report.expired += 1;
            state.metrics.swept(1);
        }
        // Else confirmed (or changed) while we waited for the lock: dropping
        // the lock leaves it as it is.
    }
    for a in state.records.attempts_with_dead_objects(BATCH).await? {
        // One upload the store will not abort, or object it will not delete,
        // must not hold up the others; it is tried again on the next pass.
        // The upload first: a part landing during the abort is seen by its
        // check (and the attempt is over, so no part lands after it).
        if let Some(upload_id) = &a.upload_id {
            if let Err(e) = state.objects.abort_multipart(&a.object_key, upload_id).await {
                tracing::warn!(key = %a.object_key, "sweep: could not abort the multipart upload: {e}");
                report.objects_refused += 1;
                continue;
            }
        }
        if let Err(e) = state.objects.delete(&a.object_key).await {
            tracing::warn!(key = %a.object_key, "sweep: could not delete the object: {e}");
            report.objects_refused += 1;
            continue;
        }
        state.records.mark_object_deleted(a.row_id).await?;
        report.objects_deleted += 1;
    }
    report.objects_deleted += super::dedup::sweep(state, BATCH).await?;
    report.bulk_resumed = super::bulk::resume_lapsed(state).await?;
    let cutoff = now.saturating_sub(state.config.rejected_retention.as_millis() as i64);
    report.media_removed = state.records.remove_rejected(cutoff, now).await?;
    for m in state.records.removed_media_with_objects(BATCH).await? {
        if let Err(e) = delete_media_objects(state, &m.object_key).await {
            tracing::warn!(key = %m.object_key, "sweep: could not delete a removed media's objects: {e}");
            report.objects_refused += 1;
            continue;
        }
        state.records.mark_media_objects_deleted(m.id).await?;
        report.media_objects_deleted += 1;
    }
    let cutoff = now.saturating_sub(state.config.record_retention.as_millis() as i64);
    (report.attempts_forgotten, report.sessions_forgotten) = state.records.forget_ended(cutoff, BATCH).await?;
    for event_id in state.records.deleted_events(EVENT_BATCH).await? {
        match purge_event(state, event_id).await {
            Ok(()) => report.events_purged += 1,
            Err(e) => tracing::warn!(event_id, "sweep: could not finish deleting an event: {e}"),
        }
    }
    if let Some(local) = &state.local_store {
        // Housekeeping: a disk that refuses it holds up nothing else.
        // A PUT's body may pause up to --put-idle-timeout: twice that, at
        // least an hour, is long past any upload still being received.
        let idle = crate::storage::local::TMP_ABANDONED_AFTER.max(state.config.limits.put_idle_timeout * 2);
        match local.remove_abandoned_tmp(idle).await {
            Ok(n) => report.tmp_entries_removed = n,
            Err(e) => tracing::warn!("sweep: could not clear what a crash left under .tmp: {e}"),
        }
    }
    let (late, refused) = late_deletes(state).await?;
    report.late_objects_deleted = late;
    report.objects_refused += refused;
    // What is left for the next pass, for `GET /metrics` (which never
    // counts in the database itself: a scrape costs nothing however often
    // it comes).
    match state.records.sweep_backlog(now).await {
        Ok(backlog) => state.ops.set_sweep_backlog(backlog),
        Err(e) => tracing::debug!("sweep: the backlog was not measured: {e}"),
    }
    Ok(report)
}

/// How many deleted events one pass finishes at most.
const EVENT_BATCH: u32 = 10;

/// Deletes the object under `key` and its renditions (absent is fine).
pub async fn delete_media_objects(state: &AppState, key: &str) -> Result<()> {
    let [thumb, display, video] = crate::media::rendition_keys(key);
    for key in [thumb, display, video, key.to_owned()] {
        state.objects.delete(&key).await?;
    }
    Ok(())
}

/// Deletes everything of an event already marked deleted: every attempt's
/// object and renditions (its multipart upload aborted first), then every
/// row, in one transaction. Stops at the first object the store will not
/// delete (the rows stay, so the next pass tries again).
pub async fn purge_event(state: &AppState, event_id: i64) -> Result<()> {
    for a in state.records.event_attempts(event_id).await? {
        if let Some(upload_id) = &a.upload_id {
            state.objects.abort_multipart(&a.object_key, upload_id).await?;
        }
        delete_media_objects(state, &a.object_key).await?;
    }
    state.records.purge_event_rows(event_id, late_delete_at(state)).await
}

/// When the objects of an event deleted now are deleted once more: after
/// the last signed URL handed out for them has expired (`--url-ttl`), and a
/// minute more for a PUT still arriving.
fn late_delete_at(state: &AppState) -> upload_once_core::time::UnixMillis {
    state.now() + state.lifetimes.url_ttl.as_millis() as i64 + 60_000
}

/// The late deletes due now: each object (and its renditions) deleted once
/// more, unless its key belongs to an attempt again; how many were done and
/// how many the store refused.
async fn late_deletes(state: &AppState) -> Result<(u64, u64)> {
    let (mut done, mut refused) = (0, 0);
    for key in state.records.due_late_deletes(state.now(), BATCH).await? {
        if state.records.attempt_by_object_key(&key).await?.is_none() {
            if let Err(e) = delete_media_objects(state, &key).await {
                tracing::warn!(key = %key, "sweep: could not delete a deleted event's late object: {e}");
                refused += 1;
                continue;
            }
        }
        state.records.forget_late_delete(&key).await?;
        done += 1;
    }
    Ok((done, refused))
}

/// Runs the sweeper every `interval` until the process ends.
pub fn spawn(state: AppState, interval: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            match sweep_once(&state).await {
                Ok(r)
                    if r.expired
                        + r.objects_deleted
                        + r.media_removed
                        + r.media_objects_deleted
                        + r.events_purged
                        + r.late_objects_deleted
                        + r.attempts_forgotten
                        + r.sessions_forgotten
                        + r.objects_refused
                        + r.tmp_entries_removed
                        > 0 =>
                {
                    tracing::info!(
                        expired = r.expired,
                        objects_deleted = r.objects_deleted,
                        media_removed = r.media_removed,
                        media_objects_deleted = r.media_objects_deleted,
                        events_purged = r.events_purged,
                        late_objects_deleted = r.late_objects_deleted,
                        objects_refused = r.objects_refused,
                        attempts_forgotten = r.attempts_forgotten,
                        sessions_forgotten = r.sessions_forgotten,
                        tmp_entries_removed = r.tmp_entries_removed,
                        "sweep"
                    )
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("sweep failed: {e}"),
            }
        }
    })
}
