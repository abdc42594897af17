//! What a session and its event hold, as the quotas count it
//! ([`upload_once_core::decide::quota`]): read inside the transaction that then inserts, so
//! the count and the insert are one step.

use sqlx::{AnyConnection, Row};
use upload_once_core::time::UnixMillis;

use crate::error::Result;
use upload_once_core::decide::quota::QuotaUsage;

/// What [`usage`] reads: `$1` the session, `$2` the event, `$3` now (each
/// part served by an index: `attempts_session`, `events`' key,
/// `attempts_event_state`; tests/every_list_query_is_served_by_an_index.rs).
/// The unary `+` keeps SQLite off `attempts_expiry`, which holds the live
/// attempts of every event.
pub const USAGE_SQL: &str = "SELECT
            (SELECT COUNT(*) FROM attempts
              WHERE session_id = $1 AND state = 'authorized' AND +expires_at > $3) AS unconfirmed,
            s.session_bytes, s.session_media,
            (SELECT attempt_count FROM sessions WHERE id = $1) AS session_attempts,
            (SELECT e.confirmed_bytes FROM events e WHERE e.id = $2) + l.live_bytes AS event_bytes,
            (SELECT e.kept_media FROM events e WHERE e.id = $2) + l.live_media AS event_media,
            (SELECT e.attempt_count FROM events e WHERE e.id = $2) AS event_attempts
        FROM
            (SELECT CAST(COALESCE(SUM(a.size), 0) AS BIGINT) AS session_bytes, COUNT(*) AS session_media
               FROM attempts a
              WHERE a.session_id = $1 AND a.duplicate_of IS NULL
                AND ((a.state = 'confirmed'
                      AND NOT EXISTS (SELECT 1 FROM media m WHERE m.attempt_row_id = a.row_id
                                                               AND m.moderation = 'rejected'))
                     OR (a.state = 'authorized' AND a.expires_at > $3
                         AND COALESCE(a.reserved_until, a.expires_at) > $3))) s,
            (SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) AS live_bytes, COUNT(*) AS live_media FROM attempts
              WHERE event_id = $2 AND state = 'authorized' AND duplicate_of IS NULL
                AND +expires_at > $3 AND COALESCE(reserved_until, expires_at) > $3) l";

/// The session's unconfirmed attempts and bytes, and the event's bytes, at
/// `now`. Bytes count what is kept or reserved: confirmed and not rejected
/// by the host or withdrawn by its guest (those stop counting at once,
/// though their objects are deleted later by the sweeper), or authorized,
/// not
/// expired, and within its reservation (a URL of it can still land bytes:
/// an attempt nobody sends anything for stops holding the event's bytes
/// within `--url-ttl`, not at its expiry days later). A rejected or expired
/// attempt holds nothing, and neither does a duplicate (it stored no bytes:
/// they are counted once, for the attempt that stored them). The event's
/// kept bytes are its running count (`events.confirmed_bytes`, moved by
/// the confirm that adds them and by each rejection, withdrawal and
/// approval again: [`upload_once_core::decide::quota::kept_bytes_change`]),
/// so an authorize costs the same in an event
/// of ten media or of a hundred thousand.
pub(crate) async fn usage(
    conn: &mut AnyConnection,
    session_id: i64,
    event_id: i64,
    now: UnixMillis,
) -> Result<QuotaUsage> {
    let row = sqlx::query(USAGE_SQL).bind(session_id).bind(event_id).bind(now).fetch_one(conn).await?;
    // A running count is never below zero; were one ever to be (a bug), it
    // must not read as 1.8e19 and shut the event.
    let count = |name: &str| -> Result<u64> { Ok(row.try_get::<i64, _>(name)?.max(0) as u64) };
    Ok(QuotaUsage {
        unconfirmed: count("unconfirmed")?,
        session_bytes: count("session_bytes")?,
        event_bytes: count("event_bytes")?,
        session_attempts: count("session_attempts")?,
        session_media: count("session_media")?,
        event_attempts: count("event_attempts")?,
        event_media: count("event_media")?,
    })
}
