//! The content index in SQL: content key → media, unique per (event,
//! scope, key) (`content_index`, migration 4), and attempts confirmed as
//! duplicates (`attempts.duplicate_of`). See [`crate::rules::dedup`] and
//! [`upload_once_core::decide::dedup`] for what the server does with it.
//!
//! Create-or-return, never read-then-insert: the confirm that creates a
//! media record claims its key in the same transaction
//! (`INSERT … ON CONFLICT DO NOTHING`), before the record exists (the
//! reference is checked at commit). A second confirm of the same bytes
//! waits for the first's row (PostgreSQL's unique index; SQLite's write
//! lock), finds it, and becomes a duplicate of its media.

use sqlx::{AnyConnection, Row};
use upload_once_core::decide::dedup;
use upload_once_core::time::UnixMillis;

use super::{ATTEMPT_COLUMNS, ATTEMPT_FROM, SqlAttemptLock, SqlStore, attempt_from_row};
use crate::error::Result;
use crate::store::{AttemptLock, AttemptRow, IndexEntry, MediaRow, NewMedia, moderation_from_db};
use upload_once_core::wire::Moderation;

impl SqlAttemptLock {
    /// [`AttemptLock::confirm_indexed`].
    pub(super) async fn confirm_in_index(
        mut self: Box<Self>,
        media: NewMedia,
        entry: &IndexEntry,
    ) -> Result<(MediaRow, bool)> {
        let claimed = sqlx::query(
            "INSERT INTO content_index (event_id, scope_id, content_key, media_id) VALUES ($1, $2, $3, $4)
             ON CONFLICT (event_id, scope_id, content_key) DO NOTHING",
        )
        .bind(entry.event_id)
        .bind(entry.scope_id)
        .bind(entry.content_key.clone())
        .bind(media.id.to_string())
        .execute(self.tx())
        .await?;
        if claimed.rows_affected() == 1 {
            // The key is this attempt's: its media record, in this transaction.
            return Ok((AttemptLock::confirm(self, media).await?, false));
        }
        let existing: String = sqlx::query_scalar(
            "SELECT media_id FROM content_index WHERE event_id = $1 AND scope_id = $2 AND content_key = $3",
        )
        .bind(entry.event_id)
        .bind(entry.scope_id)
        .bind(entry.content_key.clone())
        .fetch_one(self.tx())
        .await?;
        sqlx::query(
            "UPDATE attempts SET state = 'confirmed', duplicate_of = $1 WHERE row_id = $2 AND state = 'authorized'",
        )
        .bind(existing)
        .bind(self.attempt.row_id)
        .execute(self.tx())
        .await?;
        // No record changed, but the host's count of duplicates did.
        let event_id = self.attempt.event_id;
        super::media_changed(self.tx(), event_id, None).await?;
        let row = self.media_of_attempt().await?;
        self.finish().await?;
        Ok((row, true))
    }
}

/// The file of a media the index holds, as read for
/// [`dedup::claim_matches`].
pub(super) struct IndexedFile {
    size: i64,
    content_type: String,
    session_id: i64,
    moderation: String,
}

impl IndexedFile {
    /// The file as session `claimer` sees it: its own, or approved, or
    /// hidden from it.
    pub(super) fn as_indexed(&self, claimer: i64) -> dedup::Indexed<'_> {
        let approved = moderation_from_db(&self.moderation) == Moderation::Approved;
        dedup::Indexed {
            size: self.size as u64,
            content_type: &self.content_type,
            seen_by_claimer: self.session_id == claimer || approved,
        }
    }
}

/// The media indexed under `entry` (its id and file), if any: whether it is
/// the file a claim names is [`dedup::claim_matches`].
pub(super) async fn indexed_media(
    conn: &mut AnyConnection,
    entry: &IndexEntry,
) -> Result<Option<(String, IndexedFile)>> {
    let row = sqlx::query(
        "SELECT ci.media_id, m.size, m.content_type, m.moderation, a.session_id
         FROM content_index ci JOIN media m ON m.id = ci.media_id JOIN attempts a ON a.row_id = m.attempt_row_id
         WHERE ci.event_id = $1 AND ci.scope_id = $2 AND ci.content_key = $3",
    )
    .bind(entry.event_id)
    .bind(entry.scope_id)
    .bind(entry.content_key.clone())
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        Ok((
            row.try_get("media_id")?,
            IndexedFile {
                size: row.try_get("size")?,
                content_type: row.try_get("content_type")?,
                session_id: row.try_get("session_id")?,
                moderation: row.try_get("moderation")?,
            },
        ))
    })
    .transpose()
}

impl SqlStore {
    /// [`crate::store::RecordStore::deduplicated`].
    pub(super) async fn count_deduplicated(&self, event_id: i64) -> Result<u64> {
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM attempts WHERE event_id = $1 AND duplicate_of IS NOT NULL")
                .bind(event_id)
                .fetch_one(&self.pool)
                .await?;
        Ok(n as u64)
    }

    /// [`crate::store::RecordStore::duplicate_objects`].
    pub(super) async fn duplicates_with_objects(&self, now: UnixMillis, limit: u32) -> Result<Vec<AttemptRow>> {
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM}
             WHERE a.duplicate_of IS NOT NULL AND a.object_deleted = FALSE AND a.expires_at <= $1
             ORDER BY a.row_id LIMIT $2"
        );
        sqlx::query(&sql)
            .bind(now)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(attempt_from_row)
            .collect()
    }
}
