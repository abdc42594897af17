//! The wall's live feed: one watcher per event that has listeners, however
//! many walls listen. It reads what was approved after its position
//! (`records.wall`, the cursor query) when this instance approves something
//! (the moderation handler pokes it) or, for approvals on other instances,
//! every [`MediaSettings::live_poll`]; and it broadcasts each new page,
//! rendered once, to every wall of the event. A take-down on this instance
//! is broadcast too; one on another instance reaches the walls through
//! their periodic re-read.
//!
//! A rotated credential or a deleted event ends every wall stream it no
//! longer opens: at once for a change on this instance, within
//! `CREDENTIALS_CHECK` (5 s) for one on another.
//!
//! A listener never misses an item: it subscribes before it reads what it
//! has not seen, and a page whose start lies past the listener's position
//! (it subscribed while the watcher started, or fell behind and lost
//! pages) makes it read the gap from the database itself.
//!
//! This is the hub of feeds; the watcher that reads and renders is
//! services/live.rs.
//!
//! [`MediaSettings::live_poll`]: super::MediaSettings::live_poll

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, broadcast, watch};
use uuid::Uuid;

/// Pages a slow listener may fall behind before it reads the gap itself.
const BACKLOG: usize = 64;

/// What the watcher tells every wall of an event.
#[derive(Clone, Debug)]
pub enum Change {
    /// Newly approved media: the wall positions from `from` (exclusive) to
    /// `to`, each item with its position and its JSON.
    Approved {
        /// The watcher's position before this page.
        from: i64,
        /// The position of the last item.
        to: i64,
        /// (position, the item as JSON).
        items: Vec<(i64, String)>,
    },
    /// The host took this media off the wall.
    Removed(Uuid),
    /// The event's credentials changed (a rotation) or the event was
    /// deleted: every wall checks its own credential again, and a wall it
    /// no longer opens is ended.
    Credentials,
}

/// How often the watcher reads its event's credentials, for a rotation or
/// a deletion on another instance (one on this instance is told at once).
pub const CREDENTIALS_CHECK: Duration = Duration::from_secs(5);

/// What a wall's credential is checked against: the event's guest code and
/// token hashes; `None` once the event is deleted.
pub fn credentials(event: Option<&crate::store::EventRow>) -> Option<(String, String, String)> {
    event.map(|e| (e.guest_code.clone(), e.wall_token_hash.clone(), e.host_token_hash.clone()))
}

/// One event's feed: what its watcher broadcasts, and the poke that wakes
/// it.
pub struct Feed {
    /// The changes, to every wall of the event.
    pub changes: broadcast::Sender<Arc<Change>>,
    /// Wakes the watcher (an approval on this instance).
    pub poke: Notify,
    /// `true` once the watcher has read the position it starts from. A
    /// listener reads what it has not seen only after that (see
    /// `services::live::subscribe`): an approval committed after its read
    /// then lies after the watcher's start, so the watcher broadcasts it.
    pub started: watch::Sender<bool>,
}

/// Every event's feed on this instance.
#[derive(Default)]
pub struct LiveHub {
    feeds: Mutex<HashMap<i64, Arc<Feed>>>,
}

impl LiveHub {
    /// Listens to an event's changes: the receiver, the feed, and whether
    /// the feed is new (its watcher is then to be started:
    /// services/live.rs).
    pub fn subscribe(&self, event_id: i64) -> (broadcast::Receiver<Arc<Change>>, Arc<Feed>, bool) {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(feed) = feeds.get(&event_id) {
            return (feed.changes.subscribe(), feed.clone(), false);
        }
        let (changes, receiver) = broadcast::channel(BACKLOG);
        let feed = Arc::new(Feed { changes, poke: Notify::new(), started: watch::Sender::new(false) });
        feeds.insert(event_id, feed.clone());
        (receiver, feed, true)
    }

    /// Something changed on an event's wall (an approval on this instance).
    pub fn poke(&self, event_id: i64) {
        if let Some(feed) = self.feeds.lock().unwrap_or_else(|e| e.into_inner()).get(&event_id) {
            feed.poke.notify_one();
        }
    }

    /// The host took a media record off an event's wall.
    pub fn removed(&self, event_id: i64, media_id: Uuid) {
        if let Some(feed) = self.feeds.lock().unwrap_or_else(|e| e.into_inner()).get(&event_id) {
            let _ = feed.changes.send(Arc::new(Change::Removed(media_id)));
        }
    }

    /// The event's credentials changed (rotated, or the event deleted) on
    /// this instance: its walls check theirs again now.
    pub fn credentials_changed(&self, event_id: i64) {
        if let Some(feed) = self.feeds.lock().unwrap_or_else(|e| e.into_inner()).get(&event_id) {
            let _ = feed.changes.send(Arc::new(Change::Credentials));
        }
    }

    /// Walls listening now, over all events (the metrics).
    pub fn listeners(&self) -> usize {
        self.feeds.lock().unwrap_or_else(|e| e.into_inner()).values().map(|f| f.changes.receiver_count()).sum()
    }

    /// Ends a feed nobody listens to any more; false if someone subscribed
    /// meanwhile.
    pub fn close_if_unused(&self, event_id: i64, feed: &Arc<Feed>) -> bool {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        if feed.changes.receiver_count() > 0 {
            return false;
        }
        if feeds.get(&event_id).is_some_and(|f| Arc::ptr_eq(f, feed)) {
            feeds.remove(&event_id);
        }
        true
    }
}
