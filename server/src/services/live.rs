//! The watcher of an event's live feed ([`crate::media::live`]): it reads
//! what was approved after its position and broadcasts each new page,
//! rendered once, to every wall of the event; and it reads the event's
//! credentials for a rotation or a deletion on another instance.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::media::live::{CREDENTIALS_CHECK, Change, Feed, credentials};
use crate::state::AppState;

/// How long a new wall waits for its event's watcher to read where it
/// starts (a bound on a database that does not answer; the wall then goes
/// on, and its own read fails the same way).
const START_WAIT: Duration = Duration::from_secs(10);

/// Listens to an event's changes, starting its watcher if it has none.
/// Returns once the watcher has read the position it starts from: what
/// the caller then reads itself ends at or after that position, and every
/// approval committed later lies after it, so the watcher broadcasts it.
/// (Before, a watcher that read its position after an approval on another
/// instance never broadcast that approval, and a wall that had read the
/// wall before it missed it.)
pub async fn subscribe(state: &AppState, event_id: i64) -> broadcast::Receiver<Arc<Change>> {
    let (receiver, feed, new) = state.media.live.subscribe(event_id);
    let mut started = feed.started.subscribe();
    if new {
        tokio::spawn(watch(state.clone(), event_id, feed));
    }
    if tokio::time::timeout(START_WAIT, started.wait_for(|s| *s)).await.is_err() {
        tracing::warn!(event_id, "live wall: the watcher has not read its position yet");
    }
    receiver
}

/// Renders media rows as wall items, one JSON each.
pub async fn render(state: &AppState, rows: &[crate::store::MediaRow]) -> crate::error::Result<Vec<(i64, String)>> {
    let items = super::views::wall_items(&state.links, &state.media, rows).await?;
    Ok(rows
        .iter()
        .zip(items)
        .map(|(row, item)| (row.wall_seq.unwrap_or(0), serde_json::to_string(&item).unwrap_or_default()))
        .collect())
}

async fn watch(state: AppState, event_id: i64, feed: Arc<Feed>) {
    let poll = state.media.settings.live_poll;
    let mut position = loop {
        match state.media.db.max_wall_seq(event_id).await {
            Ok(seq) => {
                feed.started.send_replace(true);
                break seq;
            }
            Err(e) => {
                tracing::warn!(event_id, "live wall: could not read the wall's position: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    // The event's credentials as last read; `None` before the first read.
    let mut known = None;
    let mut next_check = tokio::time::Instant::now();
    loop {
        if tokio::time::Instant::now() >= next_check {
            next_check = tokio::time::Instant::now() + CREDENTIALS_CHECK;
            match state.records.event_by_id(event_id).await {
                // Every change makes the walls check theirs again; so does
                // the first read: walls that subscribed before it checked
                // their credential before it, and a change in between is no
                // change from what it reads.
                Ok(event) => {
                    let now = Some(credentials(event.as_ref()));
                    if known != now {
                        let _ = feed.changes.send(Arc::new(Change::Credentials));
                        known = now;
                    }
                }
                Err(e) => tracing::debug!(event_id, "live wall: could not read the event's credentials: {e}"),
            }
        }
        let _ = tokio::time::timeout(poll, feed.poke.notified()).await;
        if feed.changes.receiver_count() == 0 && state.media.live.close_if_unused(event_id, &feed) {
            return;
        }
        loop {
            let rows = match state.records.wall(event_id, position, 100).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::debug!(event_id, "live wall: could not read the wall: {e}");
                    break;
                }
            };
            let Some(to) = rows.last().and_then(|m| m.wall_seq) else { break };
            let items = match render(&state, &rows).await {
                Ok(items) => items,
                Err(e) => {
                    tracing::debug!(event_id, "live wall: could not read the renditions: {e}");
                    break;
                }
            };
            let _ = feed.changes.send(Arc::new(Change::Approved { from: position, to, items }));
            position = to;
            if rows.len() < 100 {
                break;
            }
        }
    }
}
