//! The content index's entries, from core's dedup rules
//! ([`upload_once_core::decide::dedup`]: the scope, when a claim names the
//! file, what counts as a duplicate) over the server's records. The hooks
//! that apply them are in services/dedup.rs.

use upload_once_core::decide::dedup::{self, Scope};

use super::records::{AttemptRow, EventRow, IndexEntry, MediaRow, NewAttempt};

/// Where an attempt of `session_id` indexes `content_key` in `event`, or
/// `None` when the event keeps every upload (or there is no key).
pub fn entry(event: &EventRow, session_id: i64, content_key: Option<&str>) -> Option<IndexEntry> {
    let scope_id = match dedup::scope(event.dedup)? {
        Scope::OwnSession => session_id,
        Scope::Event => 0,
    };
    Some(IndexEntry { event_id: event.id, scope_id, content_key: content_key?.to_owned() })
}

/// Whether attempt `a` sees media `m` as a duplicate: another attempt
/// stored it.
pub fn is_duplicate(m: &MediaRow, a: &AttemptRow) -> bool {
    dedup::is_duplicate(m.attempt_row_id, a.row_id)
}

/// The authorize hook: where the attempt's claimed SHA-256 would be indexed
/// ([`RecordStore::authorize`](crate::store::RecordStore::authorize) makes
/// it a duplicate when the media indexed there is the same file,
/// [`dedup::claim_matches`]). `None`: no dedup.
pub fn authorize_entry(event: &EventRow, attempt: &NewAttempt) -> Option<IndexEntry> {
    entry(event, attempt.session_id, attempt.sha256.as_deref())
}

#[cfg(test)]
mod tests {
    use upload_once_core::wire::{Dedup, ModerationPolicy};

    use super::*;

    fn event(dedup: Dedup) -> EventRow {
        EventRow {
            id: 7,
            slug: "party".into(),
            title: "Party".into(),
            max_file_bytes: 1,
            allowed_types: vec!["image/*".into()],
            moderation: ModerationPolicy::Required,
            dedup,
            guest_code: String::new(),
            host_token_hash: String::new(),
            wall_token_hash: String::new(),
            created_at: 0,
        }
    }

    #[test]
    fn the_scope_is_the_events_choice() {
        let key = Some("ab");
        assert_eq!(entry(&event(Dedup::None), 3, key), None, "none: every upload is kept");
        let guest = entry(&event(Dedup::Guest), 3, key).unwrap();
        assert_eq!((guest.event_id, guest.scope_id, guest.content_key.as_str()), (7, 3, "ab"), "guest: the session");
        let everyone = entry(&event(Dedup::Event), 3, key).unwrap();
        assert_eq!(everyone.scope_id, 0, "event: one scope for every session");
        assert_eq!(entry(&event(Dedup::Event), 4, key), Some(everyone), "another session, the same scope");
        assert_eq!(entry(&event(Dedup::Event), 3, None), None, "no verified key, no index");
    }
}
