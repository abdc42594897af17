//! A host's decision over every waiting media of an event ("Approve all
//! waiting"), carried out in batches: one request, however many media
//! wait. Each batch reads what is still waiting and was confirmed by the
//! host's view ([`BulkModeration::upto_seq`]), decides it in one
//! transaction through the same rule as a single decision (the same wall
//! placement and live-wall news), and records its progress
//! with a renewed claim. An instance that stops mid-way leaves the
//! operation claimed until its claim lapses; then any instance's sweep
//! takes it up ([`resume_lapsed`]), and the batches go on where they
//! stopped: a batch done twice decides nothing twice.

use crate::error::Result;
use crate::state::AppState;
use crate::store::BulkModeration;

/// Media decided per batch (and per progress record).
pub const BATCH: u32 = 200;
/// How long an instance holds an operation after each batch: well past a
/// batch's time, so only a stopped instance loses it.
pub const CLAIM_MS: i64 = 60_000;

/// Carries `bulk` out on the runtime, to its end.
pub fn spawn(state: AppState, bulk: BulkModeration) {
    tokio::spawn(async move {
        if let Err(e) = run(&state, &bulk).await {
            // Its claim lapses, and a later sweep takes it up again.
            tracing::warn!(bulk = %bulk.id, "a bulk decision stopped: {e}");
        }
    });
}

/// Carries `bulk` out, batch by batch, to its end.
pub async fn run(state: &AppState, bulk: &BulkModeration) -> Result<()> {
    while !run_batch(state, bulk).await? {}
    Ok(())
}

/// Decides one batch of `bulk`; whether the operation ended with it.
pub async fn run_batch(state: &AppState, bulk: &BulkModeration) -> Result<bool> {
    let ids = state.records.bulk_batch(bulk, BATCH).await?;
    // One transaction per batch (one per media made 10,000 approvals take
    // two minutes on SQLite: a commit each).
    let rows = state.records.moderate_many(bulk.event_id, &ids, bulk.decision, state.now()).await?;
    for row in &rows {
        super::views::moderated(&state.media, row);
    }
    let decided = rows.len() as u64;
    // Fewer than a batch left, or none of it could be decided (gone
    // meanwhile): the end.
    let finished = ids.len() < BATCH as usize || decided == 0;
    state.records.bulk_progress(bulk.id, decided, state.now() + CLAIM_MS, finished).await?;
    Ok(finished)
}

/// Takes up every unfinished operation whose instance stopped (its claim
/// lapsed); how many.
pub async fn resume_lapsed(state: &AppState) -> Result<u64> {
    let mut resumed = 0;
    while let Some(bulk) = state.records.claim_lapsed_bulk(state.now(), state.now() + CLAIM_MS).await? {
        tracing::info!(bulk = %bulk.id, done = bulk.done, total = bulk.total, "a bulk decision is taken up again");
        spawn(state.clone(), bulk);
        resumed += 1;
    }
    Ok(resumed)
}
