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
        } else {
            // Confirmed (or changed) while we waited for the lock: leave it.
            lock.release().await?;
        }
    }
    for a in state.records.attempts_with_dead_objects(BATCH).await? {
        // One upload the store will not abort, or object it will not delete,
        // must not hold up the others; it is tried again on the next pass.
        // The upload first: a part landing during the abort is seen by its
        // check (and the attempt is over, so no part lands after it).
        if let Some(upload_id) = &a.upload_id {
            if let Err(e) = state.objects.abort_multipart(&a.object_key, upload_id).await {
                tracing::warn!(key = %a.object_key, "sweep: could not abort the multipart upload: {e}");
                continue;
            }
        }
        if let Err(e) = state.objects.delete(&a.object_key).await {
            tracing::warn!(key = %a.object_key, "sweep: could not delete the object: {e}");
            continue;
        }
        state.records.mark_object_deleted(a.row_id).await?;
        report.objects_deleted += 1;
    }
    report.objects_deleted += crate::dedup::sweep(state, BATCH).await?;
    Ok(report)
}

/// Runs the sweeper every `interval` until the process ends.
pub fn spawn(state: AppState, interval: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            match sweep_once(&state).await {
                Ok(r) if r.expired + r.objects_deleted > 0 => {
                    tracing::info!(expired = r.expired, objects_deleted = r.objects_deleted, "sweep")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("sweep failed: {e}"),
            }
        }
    })
}
