//! The quotas a new attempt and a new session must fit in (docs/protocol.md
//! §3.4): pure rules the server's record store applies inside the
//! transaction that inserts, to the usage it read in that same transaction
//! (so concurrent requests cannot overshoot). A duplicate found at
//! authorize adds no bytes ([`super::dedup::bytes_added`]).

use super::Refusal;
use crate::error::ErrorCode;
use crate::wire::Moderation;

/// The quotas a new attempt must fit in (checked by the store, in the
/// transaction that inserts it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptQuotas {
    /// Unconfirmed attempts per session.
    pub max_unconfirmed: u64,
    /// Bytes per session.
    pub max_session_bytes: u64,
    /// Bytes per event.
    pub max_event_bytes: u64,
    /// Attempts a session may ever make (duplicates too: each is a row).
    pub max_session_attempts: u64,
    /// Media a session may keep (with its live unconfirmed attempts).
    pub max_session_media: u64,
    /// Attempts an event may ever be asked for.
    pub max_event_attempts: u64,
    /// Media an event may keep (with its live unconfirmed attempts).
    pub max_event_media: u64,
}

/// What a session and its event hold now, as counted for the quotas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuotaUsage {
    /// The session's authorized, unexpired attempts.
    pub unconfirmed: u64,
    /// Bytes of the session's confirmed and live unconfirmed attempts.
    pub session_bytes: u64,
    /// Bytes of the event's confirmed and live unconfirmed attempts.
    pub event_bytes: u64,
    /// Attempts the session ever made.
    pub session_attempts: u64,
    /// The session's kept media (confirmed, not rejected or withdrawn, not
    /// duplicates) and live unconfirmed attempts.
    pub session_media: u64,
    /// Attempts the event was ever asked for.
    pub event_attempts: u64,
    /// The event's kept media and live unconfirmed attempts.
    pub event_media: u64,
}

/// Why one more attempt of `size` bytes does not fit, if it does not. A
/// duplicate (`size` 0 from [`super::dedup::bytes_added`]) adds an attempt
/// but no media.
pub fn attempt_refusal(usage: QuotaUsage, quotas: &AttemptQuotas, size: u64) -> Option<Refusal> {
    let media = u64::from(size > 0);
    if usage.session_attempts >= quotas.max_session_attempts
        || usage.session_media.saturating_add(media) > quotas.max_session_media
    {
        return Some(Refusal::new(
            ErrorCode::SessionFilesExceeded,
            format!(
                "this session has sent as many files as one guest may ({} uploads, {} kept at once)",
                quotas.max_session_attempts, quotas.max_session_media
            ),
        ));
    }
    if usage.event_attempts >= quotas.max_event_attempts
        || usage.event_media.saturating_add(media) > quotas.max_event_media
    {
        return Some(Refusal::new(
            ErrorCode::EventFilesExceeded,
            format!(
                "this event holds as many photos and videos as it may ({} kept, {} uploads in all)",
                quotas.max_event_media, quotas.max_event_attempts
            ),
        ));
    }
    if usage.unconfirmed >= quotas.max_unconfirmed {
        return Some(Refusal::new(
            ErrorCode::TooManyUnconfirmed,
            format!(
                "this session already has {} attempts that are not confirmed (at most {}); confirm them, or wait for them to expire, before starting more",
                usage.unconfirmed, quotas.max_unconfirmed
            ),
        ));
    }
    if usage.session_bytes.saturating_add(size) > quotas.max_session_bytes {
        return Some(Refusal::new(
            ErrorCode::SessionBytesExceeded,
            format!(
                "this file would bring this session to {} bytes; a session may have at most {}",
                usage.session_bytes.saturating_add(size),
                quotas.max_session_bytes
            ),
        ));
    }
    if usage.event_bytes.saturating_add(size) > quotas.max_event_bytes {
        return Some(Refusal::new(
            ErrorCode::EventBytesExceeded,
            format!(
                "this file would bring the event to {} bytes; an event may hold at most {}",
                usage.event_bytes.saturating_add(size),
                quotas.max_event_bytes
            ),
        ));
    }
    None
}

/// How a media's change of moderation from `before` to `after` moves the
/// count of media its event keeps: −1 into rejected, +1 out of it.
pub fn kept_media_change(before: Moderation, after: Moderation) -> i64 {
    kept_bytes_change(before, after, 1)
}

/// How a media's change of moderation from `before` to `after` moves the
/// bytes its event and session keep, for a media that stored `size` bytes.
/// The byte caps count what is kept: a rejected media (and a withdrawn one,
/// which is rejected too) stops counting at once, though its objects are
/// deleted later; one approved again counts again.
pub fn kept_bytes_change(before: Moderation, after: Moderation, size: i64) -> i64 {
    match (before == Moderation::Rejected, after == Moderation::Rejected) {
        (false, true) => -size,
        (true, false) => size,
        _ => 0,
    }
}

/// Why one more session of an event does not fit, if it does not.
pub fn session_refusal(opened_last_hour: u64, max_per_hour: u64) -> Option<Refusal> {
    (opened_last_hour >= max_per_hour).then(|| {
        Refusal::new(
            ErrorCode::TooManySessions,
            format!(
                "this event opened {opened_last_hour} guest sessions in the last hour, the most it may; try again later"
            ),
        )
    })
}

/// Why one more session of an event from this client address does not
/// fit, if it does not.
pub fn client_session_refusal(opened_last_hour: u64, max_per_hour: u64) -> Option<Refusal> {
    (opened_last_hour >= max_per_hour).then(|| {
        Refusal::new(
            ErrorCode::TooManySessions,
            format!(
                "this address opened {opened_last_hour} guest sessions of this event in the last hour, its share; try again later"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_change_into_or_out_of_rejected_moves_the_kept_bytes() {
        use Moderation::{Approved, Pending, Rejected};
        assert_eq!(kept_bytes_change(Pending, Rejected, 220), -220);
        assert_eq!(kept_bytes_change(Approved, Rejected, 220), -220);
        assert_eq!(kept_bytes_change(Rejected, Approved, 220), 220);
        assert_eq!(kept_bytes_change(Rejected, Rejected, 220), 0);
        assert_eq!(kept_bytes_change(Pending, Approved, 220), 0);
    }
}
