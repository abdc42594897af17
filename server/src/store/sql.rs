//! The record store over SQL, each statement written once: SQLite (the
//! embedded default) or PostgreSQL (production), through sqlx's `Any`
//! driver. What really differs between the two is in [`Dialect`].
//!
//! Exactly-once confirm: [`SqlStore::lock_attempt`] opens a write
//! transaction and takes the attempt's row lock (SQLite: `BEGIN IMMEDIATE`,
//! the database write lock; PostgreSQL: `SELECT … FOR UPDATE`, on any number
//! of server instances), then reads the attempt with a fresh statement, so
//! it sees everything committed before the lock was granted. Two confirms of
//! one attempt run one after the other, and the second sees `confirmed`. The
//! `UNIQUE (attempt_row_id)` constraint on `media` guards the same rule a
//! second time (`INSERT … ON CONFLICT DO NOTHING`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::{Any, AnyConnection, AnyPool, Connection, Executor, Row, Transaction};
use upload_once_core::ErrorCode;
use upload_once_core::time::UnixMillis;
use upload_once_core::wire::{AttemptState, Moderation, ModerationDecision};
use uuid::Uuid;

use super::dialect::{Dialect, dialect_of};
use super::{
    AttemptLock, AttemptRow, BulkModeration, Credential, EMPTY_SESSION_COUNTS_MS, EventRow, GuestRemoval, HostDecision,
    IndexEntry, MediaCounts, MediaFilter, MediaListing, MediaRow, NewAttempt, NewMedia, NewSession, PartDigest,
    RecordStore, SessionRow, SweepBacklog, dedup_from_db, keep_released_connection, moderation_from_db, policy_from_db,
    policy_to_db,
};
use crate::error::{Error, Result};
use crate::rules::multipart::PartPlan;
use upload_once_core::decide::{dedup, moderation, quota};

mod content_index;

const ATTEMPT_COLUMNS: &str = "a.row_id, a.id, a.session_id, a.event_id, a.filename, a.size, a.content_type, a.sha256, \
     a.object_key, a.state, a.reject_code, a.reject_reason, a.created_at, a.expires_at, \
     COALESCE(m.id, a.duplicate_of) AS media_id, \
     a.part_size, a.part_count, a.upload_id";
const ATTEMPT_FROM: &str = "attempts a LEFT JOIN media m ON m.attempt_row_id = a.row_id";
const MEDIA_COLUMNS: &str = "m.id, m.attempt_row_id, a.id AS attempt_id, a.session_id, m.event_id, e.slug, m.object_key, a.filename, \
     m.size, m.content_type, m.sha256, m.composite_sha256, m.moderation, m.moderation_reason, m.wall_seq, m.created_at, m.moderated_at, \
     m.rejected_at, m.removed_at, m.withdrawn_at, m.change_seq";
const MEDIA_FROM: &str = "media m JOIN attempts a ON a.row_id = m.attempt_row_id JOIN events e ON e.id = m.event_id";
const EVENT_COLUMNS: &str = "id, slug, title, max_file_bytes, allowed_types, moderation, guest_code, host_token_hash, \
     wall_token_hash, created_at, dedup";

fn uuid_col(row: &AnyRow, name: &str) -> Result<Uuid> {
    let text: String = row.try_get(name)?;
    Uuid::parse_str(&text).map_err(|e| Error::Database(sqlx::Error::Decode(Box::new(e))))
}

fn attempt_from_row(row: &AnyRow) -> Result<AttemptRow> {
    let state: String = row.try_get("state")?;
    let media_id: Option<String> = row.try_get("media_id")?;
    Ok(AttemptRow {
        row_id: row.try_get("row_id")?,
        id: uuid_col(row, "id")?,
        session_id: row.try_get("session_id")?,
        event_id: row.try_get("event_id")?,
        filename: row.try_get("filename")?,
        size: row.try_get::<i64, _>("size")? as u64,
        content_type: row.try_get("content_type")?,
        sha256: row.try_get("sha256")?,
        object_key: row.try_get("object_key")?,
        state: AttemptState::parse(&state).unwrap_or(AttemptState::Rejected),
        reject_code: row.try_get("reject_code")?,
        reject_reason: row.try_get("reject_reason")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        media_id: media_id.and_then(|m| Uuid::parse_str(&m).ok()),
        plan: match (row.try_get::<Option<i64>, _>("part_size")?, row.try_get::<Option<i64>, _>("part_count")?) {
            (Some(size), Some(count)) => Some(PartPlan { part_size: size as u64, part_count: count as u32 }),
            _ => None,
        },
        upload_id: row.try_get("upload_id")?,
    })
}

fn part_digest_from_row(row: &AnyRow) -> Result<PartDigest> {
    Ok(PartDigest {
        attempt_row_id: row.try_get("attempt_row_id")?,
        number: row.try_get::<i64, _>("number")? as u32,
        sha256: row.try_get("sha256")?,
    })
}

/// The state of a media record's rendition job, as a column of a `SELECT`
/// on `media` (NULL before the job is made).
const RENDITION_STATE: &str = "(SELECT j.state FROM rendition_jobs j WHERE j.media_id = media.id) AS rendition";

/// Where a media row read with `wall_seq` and [`RENDITION_STATE`] stands
/// towards the wall.
fn wall_of(row: &AnyRow) -> Result<moderation::Wall> {
    let wall_seq: Option<i64> = row.try_get("wall_seq")?;
    let rendition: Option<String> = row.try_get("rendition")?;
    Ok(moderation::Wall {
        placed: wall_seq.is_some(),
        rendition_settled: matches!(rendition.as_deref(), Some("done" | "placeholder")),
    })
}

fn media_from_row(row: &AnyRow) -> Result<MediaRow> {
    let moderation: String = row.try_get("moderation")?;
    Ok(MediaRow {
        id: uuid_col(row, "id")?,
        attempt_row_id: row.try_get("attempt_row_id")?,
        attempt_id: uuid_col(row, "attempt_id")?,
        session_id: row.try_get("session_id")?,
        event_id: row.try_get("event_id")?,
        event_slug: row.try_get("slug")?,
        object_key: row.try_get("object_key")?,
        filename: row.try_get("filename")?,
        size: row.try_get::<i64, _>("size")? as u64,
        content_type: row.try_get("content_type")?,
        sha256: row.try_get("sha256")?,
        composite_sha256: row.try_get("composite_sha256")?,
        moderation: moderation_from_db(&moderation),
        moderation_reason: row.try_get("moderation_reason")?,
        wall_seq: row.try_get("wall_seq")?,
        created_at: row.try_get("created_at")?,
        moderated_at: row.try_get("moderated_at")?,
        rejected_at: row.try_get("rejected_at")?,
        removed: row.try_get::<Option<i64>, _>("removed_at")?.is_some(),
        withdrawn: row.try_get::<Option<i64>, _>("withdrawn_at")?.is_some(),
        change_seq: row.try_get("change_seq")?,
    })
}

fn event_from_row(row: &AnyRow) -> Result<EventRow> {
    let allowed: String = row.try_get("allowed_types")?;
    let moderation: String = row.try_get("moderation")?;
    Ok(EventRow {
        id: row.try_get("id")?,
        slug: row.try_get("slug")?,
        title: row.try_get("title")?,
        max_file_bytes: row.try_get::<i64, _>("max_file_bytes")? as u64,
        allowed_types: serde_json::from_str(&allowed).unwrap_or_default(),
        moderation: policy_from_db(&moderation),
        dedup: dedup_from_db(&row.try_get::<String, _>("dedup")?),
        guest_code: row.try_get("guest_code")?,
        host_token_hash: row.try_get("host_token_hash")?,
        wall_token_hash: row.try_get("wall_token_hash")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Takes event `event_id`'s next change number, its confirmed bytes grown
/// by `stored` in the same statement. The event row's lock it takes is held
/// to the commit, so within an event the numbers are taken in commit order
/// ([`MediaListing`]): call it last before the commit, so the lock is held
/// briefly (and taken after every other lock, so no two writers wait on
/// each other).
async fn next_change(conn: &mut AnyConnection, event_id: i64, kept: Kept) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "UPDATE events SET change_seq = change_seq + 1, confirmed_bytes = confirmed_bytes + $2,
                           kept_media = kept_media + $3
         WHERE id = $1 RETURNING change_seq",
    )
    .bind(event_id)
    .bind(kept.bytes)
    .bind(kept.media)
    .fetch_one(&mut *conn)
    .await?)
}

/// How a change moves what its event keeps ([`upload_once_core::decide::quota`]).
#[derive(Clone, Copy, Debug, Default)]
struct Kept {
    bytes: i64,
    media: i64,
}

impl Kept {
    /// A media whose moderation went from `before` to `after`.
    fn moved(before: Moderation, after: Moderation, size: i64) -> Kept {
        Kept { bytes: quota::kept_bytes_change(before, after, size), media: quota::kept_media_change(before, after) }
    }
}

/// Gives media `media_id` of event `event_id` (or, `None`, only the event)
/// the event's next change number ([`next_change`]).
async fn media_changed(conn: &mut AnyConnection, event_id: i64, media_id: Option<&str>) -> Result<()> {
    media_changed_by(conn, event_id, media_id, Kept::default()).await
}

/// [`media_changed`], the event's kept bytes and media moved by `kept`
/// (down when the media stops being kept: rejected or withdrawn; up when a
/// rejected one is approved again).
async fn media_changed_by(conn: &mut AnyConnection, event_id: i64, media_id: Option<&str>, kept: Kept) -> Result<()> {
    let seq = next_change(conn, event_id, kept).await?;
    if let Some(id) = media_id {
        sqlx::query("UPDATE media SET change_seq = $1 WHERE id = $2").bind(seq).bind(id).execute(&mut *conn).await?;
    }
    Ok(())
}

/// A confirm's new media record: its first change number (`created_seq`
/// too), and the `stored` bytes added to its event's count, in two
/// statements.
async fn media_created(conn: &mut AnyConnection, event_id: i64, media_id: &str, stored: i64) -> Result<()> {
    let seq = next_change(conn, event_id, Kept { bytes: stored, media: 1 }).await?;
    sqlx::query("UPDATE media SET change_seq = $1, created_seq = $1 WHERE id = $2")
        .bind(seq)
        .bind(media_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The statement of one page of the host's list ([`MediaListing`]): `$1`
/// the event, then the moderation state (when filtered), then the last
/// media's `created_at` and id (after the first page), then the limit. Each
/// is served by an index (`media_listed`, `media_listed_by_state`; see
/// tests/every_list_query_is_served_by_an_index.rs).
pub fn media_page_sql(filter: MediaFilter, newest_first: bool, after: bool) -> String {
    let mut n = 1;
    let mut arg = || {
        n += 1;
        n
    };
    let state = if filter.moderation().is_some() { format!(" AND m.moderation = ${}", arg()) } else { String::new() };
    let (cmp, dir) = if newest_first { ("<", "DESC") } else { (">", "ASC") };
    let after = if after {
        let (at, id) = (arg(), arg());
        format!(" AND (m.created_at {cmp} ${at} OR (m.created_at = ${at} AND m.id {cmp} ${id}))")
    } else {
        String::new()
    };
    let limit = arg();
    format!(
        "SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.event_id = $1 AND m.withdrawn_at IS NULL{state}{after} \
         ORDER BY m.created_at {dir}, m.id {dir} LIMIT ${limit}"
    )
}

/// The statement of what changed in an event's media after a change
/// number (`media_changes`, served by the index of the same name).
pub const MEDIA_CHANGES_SQL: &str =
    "SELECT m.id FROM media m WHERE m.event_id = $1 AND m.change_seq > $2 ORDER BY m.change_seq LIMIT $3";

/// The statement of the host's counts, served by `media_listed_by_state`
/// alone (it covers the columns and has the same condition).
pub const MEDIA_COUNTS_SQL: &str = "SELECT m.moderation, COUNT(*) AS n FROM media m WHERE m.event_id = $1 AND m.withdrawn_at IS NULL GROUP BY m.moderation";

/// The newest `$2` wall positions of event `$1`, the least of them
/// (served by `media_wall`, read from its end).
pub const WALL_BEFORE_LAST_SQL: &str = "SELECT MIN(s.wall_seq) FROM (SELECT m.wall_seq FROM media m
     WHERE m.event_id = $1 AND m.moderation = 'approved' AND m.wall_seq IS NOT NULL
     ORDER BY m.wall_seq DESC LIMIT $2) s";

/// A page of event `$1`'s wall after position `$2`, at most `$3` (served by
/// `media_wall`).
pub fn wall_sql() -> String {
    format!(
        "SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.event_id = $1 AND m.moderation = 'approved' AND m.wall_seq > $2 ORDER BY m.wall_seq LIMIT $3"
    )
}

/// What a bulk decision counts when it begins: the media waiting that were
/// confirmed by its change number, whatever changed in them since (a
/// preview made) (served by `media_listed_by_state`: the unary `+`
/// keeps the planner off `media_changes`, which would read every media of
/// the event changed before the number, decided ones too).
pub const BULK_WAITING_COUNT_SQL: &str = "SELECT COUNT(*) FROM media m WHERE m.event_id = $1 AND m.withdrawn_at IS NULL \
     AND m.moderation = 'pending' AND +m.created_seq <= $2";

/// A bulk decision's next batch: still waiting and confirmed by its change
/// number, oldest first (served by `media_listed_by_state`, read in
/// its order and stopped at the limit; see [`BULK_WAITING_COUNT_SQL`]).
pub const BULK_BATCH_SQL: &str = "SELECT m.id FROM media m WHERE m.event_id = $1 AND m.withdrawn_at IS NULL \
     AND m.moderation = 'pending' AND +m.created_seq <= $2 ORDER BY m.created_at, m.id LIMIT $3";

const BULK_COLUMNS: &str = "id, event_id, decision, upto_seq, total, done, state, claimed_until";

fn decision_to_db(decision: ModerationDecision) -> &'static str {
    match decision {
        ModerationDecision::Approve => "approve",
        ModerationDecision::Reject => "reject",
    }
}

fn bulk_from_row(row: &AnyRow) -> Result<BulkModeration> {
    let decision: String = row.try_get("decision")?;
    let state: String = row.try_get("state")?;
    Ok(BulkModeration {
        id: uuid_col(row, "id")?,
        event_id: row.try_get("event_id")?,
        decision: if decision == "reject" { ModerationDecision::Reject } else { ModerationDecision::Approve },
        upto_seq: row.try_get("upto_seq")?,
        total: row.try_get::<i64, _>("total")?.max(0) as u64,
        done: row.try_get::<i64, _>("done")?.max(0) as u64,
        finished: state == "done",
        claimed_until: row.try_get("claimed_until")?,
    })
}

/// `$first, $first+1, …`: `count` numbered placeholders.
fn placeholders(first: usize, count: usize) -> String {
    (first..first + count).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ")
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

const HOUR_MS: i64 = 3_600_000;

/// The attempt with this id, the session's own first (databases made before
/// ids were unique may hold one id in two sessions; each keeps its own).
async fn attempt_with_id(conn: &mut AnyConnection, id: Uuid, session_id: i64) -> Result<Option<AttemptRow>> {
    let sql = format!(
        "SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.id = $1
         ORDER BY CASE WHEN a.session_id = $2 THEN 0 ELSE 1 END, a.row_id LIMIT 1"
    );
    let row = sqlx::query(&sql).bind(id.to_string()).bind(session_id).fetch_optional(conn).await?;
    row.as_ref().map(attempt_from_row).transpose()
}

/// The attempt if it is this session's; `422 id_reused` if another
/// session has the id.
/// Inserts a new attempt: authorized, or (`duplicate_of` a media) already
/// confirmed as a duplicate of it, for which nothing will be stored (its
/// object is already "deleted"). The unique index on the id holds even
/// against an insert of the same id for another event (not serialised by
/// the event's lock). Whether it was inserted.
async fn insert_attempt(conn: &mut AnyConnection, a: &NewAttempt, duplicate_of: Option<&str>) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO attempts (id, session_id, event_id, filename, size, content_type, sha256, object_key, state,
                               created_at, expires_at, part_size, part_count, duplicate_of, object_deleted, reserved_until)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
         ON CONFLICT DO NOTHING",
    )
    .bind(a.id.to_string())
    .bind(a.session_id)
    .bind(a.event_id)
    .bind(a.filename.clone())
    .bind(a.size as i64)
    .bind(a.content_type.clone())
    .bind(a.sha256.clone())
    .bind(a.object_key.clone())
    .bind(if duplicate_of.is_some() { "confirmed" } else { "authorized" })
    .bind(a.created_at)
    .bind(a.expires_at)
    .bind(a.plan.map(|p| p.part_size as i64))
    .bind(a.plan.map(|p| i64::from(p.part_count)))
    .bind(duplicate_of.map(str::to_owned))
    .bind(duplicate_of.is_some())
    .bind(a.reserved_until)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(false);
    }
    // The running counts the caps read (never lowered: every attempt made
    // is a row made).
    sqlx::query("UPDATE sessions SET attempt_count = attempt_count + 1 WHERE id = $1")
        .bind(a.session_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE events SET attempt_count = attempt_count + 1 WHERE id = $1")
        .bind(a.event_id)
        .execute(&mut *conn)
        .await?;
    Ok(true)
}

fn own_attempt(row: AttemptRow, session_id: i64) -> Result<AttemptRow> {
    if row.session_id == session_id {
        Ok(row)
    } else {
        Err(Error::problem(ErrorCode::IdReused, "this attempt id is already in use; mint a new id for a new file"))
    }
}

/// Which attempt a lock is for.
#[derive(Clone, Copy, Debug)]
enum AttemptKey {
    /// By internal id (the sweeper).
    Row(i64),
    /// By client-minted id within a session (confirm).
    OfSession(i64, Uuid),
}

impl AttemptKey {
    fn clause(self) -> &'static str {
        match self {
            AttemptKey::Row(_) => "a.row_id = $1",
            AttemptKey::OfSession(..) => "a.session_id = $1 AND a.id = $2",
        }
    }

    fn bind<'q>(self, query: Query<'q, Any, AnyArguments<'q>>) -> Query<'q, Any, AnyArguments<'q>> {
        match self {
            AttemptKey::Row(row_id) => query.bind(row_id),
            AttemptKey::OfSession(session_id, id) => query.bind(session_id).bind(id.to_string()),
        }
    }
}

/// The [`RecordStore`] over SQLite or PostgreSQL.
#[derive(Clone, Debug)]
pub struct SqlStore {
    pool: AnyPool,
    dialect: Dialect,
    discarded: Arc<AtomicU64>,
}

impl SqlStore {
    /// Blocks made when an IPv6 client was counted per /64 also hold for
    /// its /56, as clients are counted now (run at start: the blocks are
    /// few). How many were widened.
    pub async fn widen_ipv6_blocks(&self) -> Result<u64> {
        let rows = sqlx::query("SELECT event_id, client_key, created_at FROM event_blocks WHERE client_key LIKE '%:%'")
            .fetch_all(&self.pool)
            .await?;
        let mut widened = 0;
        for row in rows {
            let key: String = row.try_get("client_key")?;
            let Ok(ip) = key.parse::<std::net::IpAddr>() else { continue };
            let wide = crate::limits::rate_key(ip).to_string();
            if wide == key {
                continue;
            }
            let done = sqlx::query(
                "INSERT INTO event_blocks (event_id, client_key, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(row.try_get::<i64, _>("event_id")?)
            .bind(wide)
            .bind(row.try_get::<i64, _>("created_at")?)
            .execute(&self.pool)
            .await?;
            widened += done.rows_affected();
        }
        Ok(widened)
    }

    /// Opens the database at `url` — `sqlite://path` (created if missing),
    /// `sqlite::memory:`, or `postgres://user:password@host:port/database`
    /// (any sqlx connection option works in the URL) — and brings its schema
    /// up to date.
    pub async fn open(url: &str) -> Result<SqlStore> {
        sqlx::any::install_default_drivers();
        let dialect = dialect_of(url)?;
        let setup = dialect.session_setup(url);
        let discarded = Arc::new(AtomicU64::new(0));
        let pool = dialect
            .pool_options(url)
            .after_connect(move |conn, _| {
                let setup = setup.clone();
                Box::pin(async move {
                    conn.execute(setup.as_str()).await?;
                    Ok(())
                })
            })
            .after_release({
                let discarded = discarded.clone();
                move |conn, _| {
                    let keep = keep_released_connection(conn.is_in_transaction(), &discarded);
                    Box::pin(async move { Ok(keep) })
                }
            })
            .connect_with(dialect.connect_options(url)?)
            .await?;
        super::migrate::migrate(&pool, dialect).await?;
        Ok(SqlStore { pool, dialect, discarded })
    }

    /// The connection pool, for tools and tests that need the database
    /// itself.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The database this store runs on.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Opens a write transaction: ended by [`WriteTx::commit`], else rolled
    /// back, on every path (see [`WriteTx`]).
    async fn write(&self) -> Result<WriteTx> {
        Ok(WriteTx(Some(self.pool.begin_with(self.dialect.begin_write()).await?)))
    }

    /// Applies a host decision inside `tx` (under the wall's lock when it
    /// approves): whether the media is the event's (a decision that changes
    /// nothing still finds it).
    async fn decide_in(&self, tx: &mut WriteTx, host: &HostDecision<'_>) -> Result<bool> {
        let HostDecision { event_id, media_id, decision, reason, now } = *host;
        let sql = format!(
            "SELECT moderation, moderation_reason, moderated_at, rejected_at, wall_seq, size, {RENDITION_STATE} FROM media
             WHERE id = $1 AND event_id = $2 AND removed_at IS NULL{}",
            self.dialect.row_lock()
        );
        let Some(row) = sqlx::query(&sql).bind(media_id.to_string()).bind(event_id).fetch_optional(&mut **tx).await?
        else {
            return Ok(false);
        };
        let state: String = row.try_get("moderation")?;
        let recorded_reason: Option<String> = row.try_get("moderation_reason")?;
        let recorded = moderation::Moderated {
            state: moderation_from_db(&state),
            reason: recorded_reason.as_deref(),
            moderated_at: row.try_get("moderated_at")?,
            rejected_at: row.try_get("rejected_at")?,
        };
        if let Some(change) = moderation::decide(&recorded, wall_of(&row)?, decision, reason, now) {
            let wall_seq = if change.takes_wall_position { self.dialect.next_wall_seq() } else { "wall_seq" };
            let m = change.moderated;
            sqlx::query(&format!(
                "UPDATE media SET moderation = $1, moderation_reason = $2, moderated_at = $3, rejected_at = $4,
                     wall_seq = {wall_seq}
                 WHERE id = $5"
            ))
            .bind(m.state.as_str())
            .bind(m.reason)
            .bind(m.moderated_at)
            .bind(m.rejected_at)
            .bind(media_id.to_string())
            .execute(&mut **tx)
            .await?;
            let kept = Kept::moved(recorded.state, m.state, row.try_get("size")?);
            media_changed_by(tx, event_id, Some(&media_id.to_string()), kept).await?;
        }
        Ok(true)
    }

    /// Opens a write transaction, takes the row lock of the attempt `key`
    /// names (waiting for any other holder), then reads the attempt with a
    /// fresh statement, so it sees everything committed before the lock was
    /// granted.
    async fn lock(&self, key: AttemptKey) -> Result<Option<Box<dyn AttemptLock>>> {
        let mut tx = self.write().await?;
        let lock_sql = format!("SELECT a.row_id FROM attempts a WHERE {}{}", key.clause(), self.dialect.row_lock());
        let locked: Option<AnyRow> = key.bind(sqlx::query(&lock_sql)).fetch_optional(&mut *tx).await?;
        let Some(locked) = locked else {
            tx.rollback().await?;
            return Ok(None);
        };
        let row_id: i64 = locked.try_get(0)?;
        let sql = format!("SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.row_id = $1");
        let row = sqlx::query(&sql).bind(row_id).fetch_one(&mut *tx).await?;
        Ok(Some(Box::new(SqlAttemptLock { attempt: attempt_from_row(&row)?, tx: Some(tx) })))
    }
}

/// A write transaction that never goes back to the pool open. It is ended
/// by [`WriteTx::commit`] or [`WriteTx::rollback`]; on any other path (an
/// early answer, an error, a request future dropped) it is rolled back on
/// the runtime when it is dropped, so its connection goes back clean and
/// is reused. (Dropping a bare sqlx `Transaction` gives its connection
/// back inside the transaction, and the pool closes it:
/// [`keep_released_connection`].)
pub(crate) struct WriteTx(Option<Transaction<'static, Any>>);

impl WriteTx {
    fn open(&mut self) -> &mut Transaction<'static, Any> {
        self.0.as_mut().expect("a write transaction is open until commit or rollback takes it")
    }

    /// Commits.
    pub(crate) async fn commit(mut self) -> Result<()> {
        if let Some(tx) = self.0.take() {
            tx.commit().await?;
        }
        Ok(())
    }

    /// Rolls back now.
    pub(crate) async fn rollback(mut self) -> Result<()> {
        if let Some(tx) = self.0.take() {
            tx.rollback().await?;
        }
        Ok(())
    }
}

impl std::ops::Deref for WriteTx {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        self.0.as_ref().expect("a write transaction is open until commit or rollback takes it")
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.open()
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        let Some(tx) = self.0.take() else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = tx.rollback().await {
                    tracing::warn!("a write transaction could not be rolled back: {e}");
                }
            });
        }
    }
}

/// One attempt's row lock: a write transaction, finished by one of the
/// [`AttemptLock`] methods that consume it, or else rolled back when it is
/// dropped ([`WriteTx`]: no path releases it by hand).
struct SqlAttemptLock {
    attempt: AttemptRow,
    /// `Some` until a finishing method takes it.
    tx: Option<WriteTx>,
}

impl SqlAttemptLock {
    /// The open transaction.
    fn tx(&mut self) -> &mut AnyConnection {
        self.tx.as_mut().expect("a lock's transaction is open until a finishing method takes it")
    }

    /// Commits the transaction: the lock is finished.
    async fn finish(&mut self) -> Result<()> {
        if let Some(tx) = self.tx.take() {
            tx.commit().await?;
        }
        Ok(())
    }

    /// The media record the attempt created, or the one it duplicates.
    async fn media_of_attempt(&mut self) -> Result<MediaRow> {
        let sql = format!(
            "SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.attempt_row_id = $1 OR m.id = (SELECT d.duplicate_of FROM attempts d WHERE d.row_id = $1)"
        );
        let row = sqlx::query(&sql).bind(self.attempt.row_id).fetch_one(self.tx()).await?;
        media_from_row(&row)
    }
}

#[async_trait]
impl AttemptLock for SqlAttemptLock {
    fn attempt(&self) -> &AttemptRow {
        &self.attempt
    }

    async fn media(&mut self) -> Result<MediaRow> {
        self.media_of_attempt().await
    }

    async fn set_upload_id(&mut self, upload_id: &str) -> Result<()> {
        sqlx::query("UPDATE attempts SET upload_id = $1 WHERE row_id = $2")
            .bind(upload_id)
            .bind(self.attempt.row_id)
            .execute(self.tx())
            .await?;
        self.attempt.upload_id = Some(upload_id.to_owned());
        Ok(())
    }

    async fn record_part_digests(&mut self, parts: &[(u32, Option<String>)]) -> Result<()> {
        if parts.is_empty() {
            return Ok(());
        }
        // A digest that differs from the one recorded (or is missing on
        // either side) leaves the part without one: NULL = x is never true.
        let values =
            (0..parts.len()).map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3)).collect::<Vec<_>>();
        let sql = format!(
            "INSERT INTO part_digests (attempt_row_id, number, sha256) VALUES {}
             ON CONFLICT (attempt_row_id, number) DO UPDATE SET sha256 =
                CASE WHEN part_digests.sha256 = excluded.sha256 THEN part_digests.sha256 ELSE NULL END",
            values.join(", ")
        );
        let mut query = sqlx::query(&sql);
        for (number, sha256) in parts {
            query = query.bind(self.attempt.row_id).bind(i64::from(*number)).bind(sha256.clone());
        }
        query.execute(self.tx()).await?;
        Ok(())
    }

    async fn part_digests(&mut self) -> Result<Vec<PartDigest>> {
        sqlx::query("SELECT attempt_row_id, number, sha256 FROM part_digests WHERE attempt_row_id = $1 ORDER BY number")
            .bind(self.attempt.row_id)
            .fetch_all(self.tx())
            .await?
            .iter()
            .map(part_digest_from_row)
            .collect()
    }

    async fn commit(mut self: Box<Self>) -> Result<()> {
        self.finish().await?;
        Ok(())
    }

    async fn confirm(mut self: Box<Self>, media: NewMedia) -> Result<MediaRow> {
        let approved = media.moderation == Moderation::Approved;
        // No wall position yet, approved or not: its rendition job places it
        // once the renditions are settled (`place_on_wall`).
        let sql = "INSERT INTO media (id, attempt_row_id, event_id, object_key, size, content_type, sha256, moderation, created_at, moderated_at, composite_sha256)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10, CASE WHEN $9 THEN $10 END, $11)
             ON CONFLICT (attempt_row_id) DO NOTHING";
        let row_id = self.attempt.row_id;
        let inserted = sqlx::query(sql)
            .bind(media.id.to_string())
            .bind(row_id)
            .bind(self.attempt.event_id)
            .bind(self.attempt.object_key.clone())
            .bind(media.size as i64)
            .bind(media.content_type.clone())
            .bind(media.sha256.clone())
            .bind(media.moderation.as_str())
            .bind(approved)
            .bind(media.created_at)
            .bind(media.composite_sha256.clone())
            .execute(self.tx())
            .await?;
        if inserted.rows_affected() == 1 {
            sqlx::query("UPDATE attempts SET state = 'confirmed' WHERE row_id = $1 AND state = 'authorized'")
                .bind(row_id)
                .execute(self.tx())
                .await?;
            let (event_id, stored) = (self.attempt.event_id, self.attempt.size as i64);
            media_created(self.tx(), event_id, &media.id.to_string(), stored).await?;
        }
        // On a conflict (impossible under the lock) the existing record wins.
        let row = self.media_of_attempt().await?;
        self.finish().await?;
        Ok(row)
    }

    async fn confirm_indexed(self: Box<Self>, media: NewMedia, entry: &IndexEntry) -> Result<(MediaRow, bool)> {
        self.confirm_in_index(media, entry).await
    }

    async fn reject(mut self: Box<Self>, code: &str, reason: &str) -> Result<()> {
        sqlx::query(
            "UPDATE attempts SET state = 'rejected', reject_code = $1, reject_reason = $2 WHERE row_id = $3 AND state = 'authorized'",
        )
        .bind(code)
        .bind(reason)
        .bind(self.attempt.row_id)
        .execute(self.tx())
        .await?;
        self.finish().await?;
        Ok(())
    }

    async fn withdraw_media(mut self: Box<Self>, reason: &str, now: UnixMillis) -> Result<Option<MediaRow>> {
        // A media not yet rejected stops being kept now. The rejection and
        // what it moves are one conditional UPDATE: a host's decision on the
        // same row waits for its lock (PostgreSQL re-reads the row after the
        // wait), so the counts move once, whoever comes first.
        let size: Option<i64> =
            sqlx::query_scalar("UPDATE media SET moderation = 'rejected' WHERE attempt_row_id = $1 AND moderation <> 'rejected' RETURNING size")
                .bind(self.attempt.row_id)
                .fetch_optional(self.tx())
                .await?;
        let kept = size.map_or_else(Kept::default, |size| Kept::moved(Moderation::Pending, Moderation::Rejected, size));
        let id: Option<String> = sqlx::query_scalar(
            "UPDATE media SET moderation = 'rejected', moderation_reason = $1, moderated_at = $2,
                 rejected_at = COALESCE(rejected_at, $2), removed_at = COALESCE(removed_at, $2),
                 withdrawn_at = COALESCE(withdrawn_at, $2)
             WHERE attempt_row_id = $3 RETURNING id",
        )
        .bind(reason)
        .bind(now)
        .bind(self.attempt.row_id)
        .fetch_optional(self.tx())
        .await?;
        let Some(id) = id else {
            // Nothing changed: dropping the lock rolls back.
            return Ok(None);
        };
        // The same photo shared again is stored again, not confirmed as a
        // duplicate of what is gone.
        sqlx::query("DELETE FROM content_index WHERE media_id = $1").bind(&id).execute(self.tx()).await?;
        let event_id = self.attempt.event_id;
        media_changed_by(self.tx(), event_id, Some(&id), kept).await?;
        let sql = format!("SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.id = $1");
        let row = sqlx::query(&sql).bind(&id).fetch_one(self.tx()).await?;
        let media = media_from_row(&row)?;
        self.finish().await?;
        Ok(Some(media))
    }

    async fn expire(mut self: Box<Self>) -> Result<()> {
        sqlx::query("UPDATE attempts SET state = 'expired' WHERE row_id = $1 AND state = 'authorized'")
            .bind(self.attempt.row_id)
            .execute(self.tx())
            .await?;
        self.finish().await?;
        Ok(())
    }
}

#[async_trait]
impl RecordStore for SqlStore {
    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn probe_write(&self, now: UnixMillis) -> Result<()> {
        sqlx::query(
            "INSERT INTO readiness (id, checked_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
        )
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    fn dirty_connections_discarded(&self) -> u64 {
        self.discarded.load(Ordering::SeqCst)
    }

    async fn create_event(&self, e: EventRow) -> Result<EventRow> {
        let result = sqlx::query(
            "INSERT INTO events (slug, title, max_file_bytes, allowed_types, moderation, guest_code, host_token_hash, wall_token_hash, created_at, dedup)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        )
        .bind(e.slug.clone())
        .bind(e.title.clone())
        .bind(e.max_file_bytes as i64)
        .bind(serde_json::to_string(&e.allowed_types).unwrap_or_else(|_| "[]".into()))
        .bind(policy_to_db(e.moderation))
        .bind(e.guest_code.clone())
        .bind(e.host_token_hash.clone())
        .bind(e.wall_token_hash.clone())
        .bind(e.created_at)
        .bind(e.dedup.as_str())
        .fetch_one(&self.pool)
        .await;
        match result {
            Err(err) if is_unique_violation(&err) => {
                Err(Error::problem(ErrorCode::SlugTaken, format!("an event named `{}` already exists", e.slug)))
            }
            Err(err) => Err(err.into()),
            Ok(row) => Ok(EventRow { id: row.try_get(0)?, ..e }),
        }
    }

    async fn event_by_slug(&self, slug: &str) -> Result<Option<EventRow>> {
        let sql = format!("SELECT {EVENT_COLUMNS} FROM events WHERE slug = $1 AND deleted_at IS NULL");
        let row = sqlx::query(&sql).bind(slug).fetch_optional(&self.pool).await?;
        row.as_ref().map(event_from_row).transpose()
    }

    async fn event_by_id(&self, id: i64) -> Result<Option<EventRow>> {
        let sql = format!("SELECT {EVENT_COLUMNS} FROM events WHERE id = $1 AND deleted_at IS NULL");
        let row = sqlx::query(&sql).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(event_from_row).transpose()
    }

    async fn set_host_token_hash(&self, event_id: i64, hash: &str) -> Result<()> {
        sqlx::query("UPDATE events SET host_token_hash = $1 WHERE id = $2")
            .bind(hash)
            .bind(event_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn create_session(&self, s: NewSession) -> Result<SessionRow> {
        let mut tx = self.write().await?;
        self.dialect.lock_event(&mut tx, s.event_id).await?;
        if let Some(key) = &s.client_key {
            let blocked: Option<i64> =
                sqlx::query_scalar("SELECT 1 FROM event_blocks WHERE event_id = $1 AND client_key = $2")
                    .bind(s.event_id)
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await?;
            if blocked.is_some() {
                tx.rollback().await?;
                return Err(Error::problem(
                    ErrorCode::AddressBlocked,
                    "the event's host shut this address out of the event",
                ));
            }
        }
        // Sessions of the last hour, those of this address among them; one
        // that authorized nothing stops counting soon.
        let counted = sqlx::query(
            "SELECT COUNT(*) AS opened,
                    CAST(COALESCE(SUM(CASE WHEN s.client_key = $3 THEN 1 ELSE 0 END), 0) AS BIGINT) AS from_client
             FROM sessions s
             WHERE s.event_id = $1 AND s.created_at > $2
               AND (s.created_at > $4 OR EXISTS (SELECT 1 FROM attempts a WHERE a.session_id = s.id))",
        )
        .bind(s.event_id)
        .bind(s.now - HOUR_MS)
        .bind(s.client_key.as_deref())
        .bind(s.now - EMPTY_SESSION_COUNTS_MS)
        .fetch_one(&mut *tx)
        .await?;
        let opened: i64 = counted.try_get("opened")?;
        let from_client: i64 = counted.try_get("from_client")?;
        let refusal = quota::session_refusal(opened as u64, s.max_per_hour)
            .or_else(|| quota::client_session_refusal(from_client as u64, s.max_per_client_per_hour));
        if let Some(refusal) = refusal {
            tx.rollback().await?;
            return Err(refusal.into());
        }
        let row = sqlx::query(
            "INSERT INTO sessions (event_id, token_hash, created_at, expires_at, client_key)
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(s.event_id)
        .bind(s.token_hash)
        .bind(s.now)
        .bind(s.expires_at)
        .bind(s.client_key)
        .fetch_one(&mut *tx)
        .await?;
        let id = row.try_get(0)?;
        tx.commit().await?;
        Ok(SessionRow { id, event_id: s.event_id, expires_at: s.expires_at, revoked: false })
    }

    async fn revoke_session(&self, removal: GuestRemoval) -> Result<Option<Vec<AttemptRow>>> {
        let GuestRemoval { event_id, session_id, block_address: block, now } = removal;
        let mut tx = self.write().await?;
        // Under the event's lock, as every authorize and new session is: none
        // of the address's starts between the sessions ended here and the
        // block (and an authorize that passed its session check before
        // re-checks it under this lock).
        self.dialect.lock_event(&mut tx, event_id).await?;
        let key = sqlx::query("SELECT client_key FROM sessions WHERE id = $1 AND event_id = $2")
            .bind(session_id)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(key) = key else {
            tx.rollback().await?;
            return Ok(None);
        };
        let key: Option<String> = key.try_get("client_key")?;
        // Keyed as addresses are counted now (a session opened before IPv6
        // was counted per /56 carries its /64).
        let key = key.map(|k| k.parse().map_or(k, |ip| crate::limits::rate_key(ip).to_string()));
        // The sessions it ends: this one, and with the address blocked
        // every other session of the event opened from that address (the
        // same phone in another browser, or a second session of the
        // same hostile client).
        let ended: Vec<i64> = match (block, &key) {
            (true, Some(key)) => {
                sqlx::query_scalar("SELECT id FROM sessions WHERE event_id = $1 AND client_key = $2 ORDER BY id")
                    .bind(event_id)
                    .bind(key)
                    .fetch_all(&mut *tx)
                    .await?
            }
            _ => vec![session_id],
        };
        let mut live = Vec::new();
        for session in &ended {
            sqlx::query("UPDATE sessions SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2")
                .bind(now)
                .bind(session)
                .execute(&mut *tx)
                .await?;
            let sql = format!(
                "SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.session_id = $1 AND a.state = 'authorized' ORDER BY a.row_id"
            );
            for row in sqlx::query(&sql).bind(session).fetch_all(&mut *tx).await? {
                live.push(attempt_from_row(&row)?);
            }
            sqlx::query(
                "UPDATE attempts SET state = 'rejected', reject_code = $1, reject_reason = $2
                 WHERE session_id = $3 AND state = 'authorized'",
            )
            .bind(ErrorCode::SessionRevoked.as_str())
            .bind("the event's host removed this guest")
            .bind(session)
            .execute(&mut *tx)
            .await?;
        }
        if let (true, Some(key)) = (block, key) {
            sqlx::query(
                "INSERT INTO event_blocks (event_id, client_key, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(event_id)
            .bind(key)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Some(live))
    }

    async fn reserve(&self, attempt_row_id: i64, until: UnixMillis) -> Result<()> {
        sqlx::query(
            "UPDATE attempts SET reserved_until = $1
             WHERE row_id = $2 AND state = 'authorized' AND (reserved_until IS NULL OR reserved_until < $1)",
        )
        .bind(until)
        .bind(attempt_row_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn extend_session(&self, session_id: i64, until: UnixMillis) -> Result<()> {
        // Only ever later: one statement, so concurrent authorizes cannot
        // move it back.
        sqlx::query("UPDATE sessions SET expires_at = $1 WHERE id = $2 AND expires_at < $1")
            .bind(until)
            .bind(session_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn session_by_token_hash(&self, hash: &str) -> Result<Option<SessionRow>> {
        // A deleted event's sessions are unknown. A session from an address
        // the event's host blocked is ended, whenever it was opened.
        let row = sqlx::query(
            "SELECT s.id, s.event_id, s.expires_at, s.revoked_at,
                    CAST(CASE WHEN EXISTS (SELECT 1 FROM event_blocks b
                                           WHERE b.event_id = s.event_id AND b.client_key = s.client_key)
                         THEN 1 ELSE 0 END AS BIGINT) AS blocked
             FROM sessions s JOIN events e ON e.id = s.event_id
             WHERE s.token_hash = $1 AND e.deleted_at IS NULL",
        )
        .bind(hash)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(SessionRow {
                id: r.try_get("id")?,
                event_id: r.try_get("event_id")?,
                expires_at: r.try_get("expires_at")?,
                revoked: r.try_get::<Option<i64>, _>("revoked_at")?.is_some() || r.try_get::<i64, _>("blocked")? == 1,
            })
        })
        .transpose()
    }

    async fn authorize(&self, a: NewAttempt, dedup: Option<IndexEntry>) -> Result<(AttemptRow, bool)> {
        // One transaction: nothing else adds to this event's quotas until it
        // ends (SQLite's write lock; PostgreSQL's per-event advisory lock).
        let mut tx = self.write().await?;
        self.dialect.lock_event(&mut tx, a.event_id).await?;
        // The session was checked before the lock: a host who removed it
        // (or blocked its address) meanwhile holds the same lock, so it is
        // checked again here.
        let ended: i64 = sqlx::query_scalar(
            "SELECT CAST(CASE WHEN s.revoked_at IS NOT NULL OR EXISTS (
                     SELECT 1 FROM event_blocks b WHERE b.event_id = s.event_id AND b.client_key = s.client_key)
                 THEN 1 ELSE 0 END AS BIGINT) FROM sessions s WHERE s.id = $1",
        )
        .bind(a.session_id)
        .fetch_optional(&mut *tx)
        .await?
        .unwrap_or(1);
        if ended == 1 {
            tx.rollback().await?;
            return Err(Error::problem(ErrorCode::SessionRevoked, "the event's host removed this guest"));
        }
        // Create-or-return is per id, across sessions: the session's own
        // attempt is returned; another session's is never a second row.
        if let Some(row) = attempt_with_id(&mut tx, a.id, a.session_id).await? {
            tx.rollback().await?;
            return own_attempt(row, a.session_id).map(|row| (row, false));
        }
        let usage = super::quota::usage(&mut tx, a.session_id, a.event_id, a.created_at).await?;
        // The same bytes, as the same kind of file, already stored in the
        // dedup scope: a duplicate, which stores nothing, so it goes through
        // the quotas as the nothing it adds (under the event's lock, the
        // index read and the insert are one step).
        let duplicate_of = match &dedup {
            Some(entry) => content_index::indexed_media(&mut tx, entry)
                .await?
                .filter(|(_, indexed)| dedup::claim_matches(&indexed.as_indexed(a.session_id), a.size, &a.content_type))
                .map(|(media_id, _)| media_id),
            None => None,
        };
        let adds = dedup::bytes_added(duplicate_of.is_some(), a.size);
        if let Some(refusal) = quota::attempt_refusal(usage, &a.quotas, adds) {
            tx.rollback().await?;
            return Err(refusal.into());
        }
        let inserted = insert_attempt(&mut tx, &a, duplicate_of.as_deref()).await?;
        let row = attempt_with_id(&mut tx, a.id, a.session_id).await?.ok_or_else(|| Error::not_found("attempt"))?;
        tx.commit().await?;
        own_attempt(row, a.session_id).map(|row| (row, inserted))
    }

    async fn attempt(&self, session_id: i64, id: Uuid) -> Result<Option<AttemptRow>> {
        let sql = format!("SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.session_id = $1 AND a.id = $2");
        let row = sqlx::query(&sql).bind(session_id).bind(id.to_string()).fetch_optional(&self.pool).await?;
        row.as_ref().map(attempt_from_row).transpose()
    }

    async fn attempts(&self, session_id: i64, ids: &[Uuid]) -> Result<Vec<AttemptRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.session_id = $1 AND a.id IN ({})",
            placeholders(2, ids.len())
        );
        let mut query = sqlx::query(&sql).bind(session_id);
        for id in ids {
            query = query.bind(id.to_string());
        }
        query.fetch_all(&self.pool).await?.iter().map(attempt_from_row).collect()
    }

    async fn attempt_by_object_key(&self, key: &str) -> Result<Option<AttemptRow>> {
        let sql = format!("SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.object_key = $1");
        let row = sqlx::query(&sql).bind(key).fetch_optional(&self.pool).await?;
        row.as_ref().map(attempt_from_row).transpose()
    }

    async fn lock_attempt(&self, session_id: i64, id: Uuid) -> Result<Option<Box<dyn AttemptLock>>> {
        self.lock(AttemptKey::OfSession(session_id, id)).await
    }

    async fn lock_attempt_row(&self, row_id: i64) -> Result<Option<Box<dyn AttemptLock>>> {
        self.lock(AttemptKey::Row(row_id)).await
    }

    async fn expired_attempts(&self, now: UnixMillis, limit: u32) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT row_id FROM attempts WHERE state = 'authorized' AND expires_at <= $1 ORDER BY expires_at LIMIT $2",
        )
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?)
    }

    async fn attempts_with_dead_objects(&self, limit: u32) -> Result<Vec<AttemptRow>> {
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.state IN ('expired', 'rejected') AND a.object_deleted = FALSE ORDER BY a.row_id LIMIT $1"
        );
        sqlx::query(&sql).bind(i64::from(limit)).fetch_all(&self.pool).await?.iter().map(attempt_from_row).collect()
    }

    async fn part_digests(&self, attempt_row_ids: &[i64]) -> Result<Vec<PartDigest>> {
        if attempt_row_ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT attempt_row_id, number, sha256 FROM part_digests WHERE attempt_row_id IN ({}) ORDER BY attempt_row_id, number",
            placeholders(1, attempt_row_ids.len())
        );
        let mut query = sqlx::query(&sql);
        for id in attempt_row_ids {
            query = query.bind(*id);
        }
        query.fetch_all(&self.pool).await?.iter().map(part_digest_from_row).collect()
    }

    async fn mark_object_deleted(&self, row_id: i64) -> Result<()> {
        sqlx::query("UPDATE attempts SET object_deleted = TRUE WHERE row_id = $1")
            .bind(row_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn sweep_backlog(&self, now: UnixMillis) -> Result<SweepBacklog> {
        let row = sqlx::query(
            "SELECT
                (SELECT COUNT(*) FROM attempts WHERE state = 'authorized' AND expires_at <= $1) AS expired_attempts,
                (SELECT COUNT(*) FROM attempts WHERE state IN ('expired', 'rejected') AND object_deleted = FALSE) AS dead_objects",
        )
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        Ok(SweepBacklog {
            expired_attempts: row.try_get::<i64, _>("expired_attempts")? as u64,
            dead_objects: row.try_get::<i64, _>("dead_objects")? as u64,
        })
    }

    async fn media(&self, id: Uuid) -> Result<Option<MediaRow>> {
        let sql = format!("SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.id = $1");
        let row = sqlx::query(&sql).bind(id.to_string()).fetch_optional(&self.pool).await?;
        row.as_ref().map(media_from_row).transpose()
    }

    async fn media_for_attempts(&self, attempt_row_ids: &[i64]) -> Result<Vec<MediaRow>> {
        if attempt_row_ids.is_empty() {
            return Ok(Vec::new());
        }
        // The records they created, and those they are duplicates of.
        let sql = format!(
            "SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.attempt_row_id IN ({0})
                OR m.id IN (SELECT d.duplicate_of FROM attempts d WHERE d.row_id IN ({0}))",
            placeholders(1, attempt_row_ids.len())
        );
        let mut query = sqlx::query(&sql);
        for id in attempt_row_ids {
            query = query.bind(*id);
        }
        query.fetch_all(&self.pool).await?.iter().map(media_from_row).collect()
    }

    async fn list_media(&self, event_id: i64, moderation: Option<Moderation>) -> Result<Vec<MediaRow>> {
        let sql = format!(
            "SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.event_id = $1 AND m.withdrawn_at IS NULL \
             AND (CAST($2 AS TEXT) IS NULL OR m.moderation = $2) ORDER BY m.created_at, m.id"
        );
        let filter = moderation.map(Moderation::as_str);
        sqlx::query(&sql).bind(event_id).bind(filter).fetch_all(&self.pool).await?.iter().map(media_from_row).collect()
    }

    async fn media_page(&self, listing: &MediaListing) -> Result<Vec<MediaRow>> {
        let sql = media_page_sql(listing.filter, listing.newest_first, listing.after.is_some());
        let mut query = sqlx::query(&sql).bind(listing.event_id);
        if let Some(state) = listing.filter.moderation() {
            query = query.bind(state.as_str());
        }
        if let Some((at, id)) = listing.after {
            query = query.bind(at).bind(id.to_string());
        }
        query = query.bind(i64::from(listing.limit));
        query.fetch_all(&self.pool).await?.iter().map(media_from_row).collect()
    }

    async fn media_changes(&self, event_id: i64, after: i64, limit: u32) -> Result<Vec<MediaRow>> {
        // The ids first, by the index alone; then their rows.
        let ids: Vec<String> = sqlx::query_scalar(MEDIA_CHANGES_SQL)
            .bind(event_id)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.id IN ({}) ORDER BY m.change_seq",
            placeholders(1, ids.len())
        );
        let mut query = sqlx::query(&sql);
        for id in &ids {
            query = query.bind(id.as_str());
        }
        query.fetch_all(&self.pool).await?.iter().map(media_from_row).collect()
    }

    async fn change_seq(&self, event_id: i64) -> Result<i64> {
        let seq: Option<i64> = sqlx::query_scalar("SELECT change_seq FROM events WHERE id = $1")
            .bind(event_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(seq.unwrap_or(0))
    }

    async fn media_counts(&self, event_id: i64) -> Result<MediaCounts> {
        let rows = sqlx::query(MEDIA_COUNTS_SQL).bind(event_id).fetch_all(&self.pool).await?;
        let mut counts = MediaCounts::default();
        for row in &rows {
            let state: String = row.try_get("moderation")?;
            let n = row.try_get::<i64, _>("n")?.max(0) as u64;
            match moderation_from_db(&state) {
                Moderation::Pending => counts.pending += n,
                Moderation::Approved => counts.approved += n,
                Moderation::Rejected => counts.rejected += n,
            }
        }
        Ok(counts)
    }

    async fn start_bulk(
        &self,
        event_id: i64,
        decision: ModerationDecision,
        upto_seq: i64,
        now: UnixMillis,
        claimed_until: UnixMillis,
    ) -> Result<BulkModeration> {
        let mut tx = self.write().await?;
        let total: i64 =
            sqlx::query_scalar(BULK_WAITING_COUNT_SQL).bind(event_id).bind(upto_seq).fetch_one(&mut *tx).await?;
        let bulk = BulkModeration {
            id: Uuid::new_v4(),
            event_id,
            decision,
            upto_seq,
            total: total.max(0) as u64,
            done: 0,
            finished: total == 0,
            claimed_until,
        };
        sqlx::query(
            "INSERT INTO bulk_moderations (id, event_id, decision, upto_seq, total, done, state, created_at, claimed_until)
             VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8)",
        )
        .bind(bulk.id.to_string())
        .bind(event_id)
        .bind(decision_to_db(decision))
        .bind(upto_seq)
        .bind(total)
        .bind(if bulk.finished { "done" } else { "running" })
        .bind(now)
        .bind(claimed_until)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(bulk)
    }

    async fn bulk(&self, event_id: i64, id: Uuid) -> Result<Option<BulkModeration>> {
        let sql = format!("SELECT {BULK_COLUMNS} FROM bulk_moderations WHERE id = $1 AND event_id = $2");
        let row = sqlx::query(&sql).bind(id.to_string()).bind(event_id).fetch_optional(&self.pool).await?;
        row.as_ref().map(bulk_from_row).transpose()
    }

    async fn claim_lapsed_bulk(&self, now: UnixMillis, claimed_until: UnixMillis) -> Result<Option<BulkModeration>> {
        let sql = format!(
            "UPDATE bulk_moderations SET claimed_until = $1
             WHERE id = (SELECT id FROM bulk_moderations WHERE state = 'running' AND claimed_until < $2 LIMIT 1)
               AND state = 'running' AND claimed_until < $2
             RETURNING {BULK_COLUMNS}"
        );
        let row = sqlx::query(&sql).bind(claimed_until).bind(now).fetch_optional(&self.pool).await?;
        row.as_ref().map(bulk_from_row).transpose()
    }

    async fn bulk_batch(&self, bulk: &BulkModeration, limit: u32) -> Result<Vec<Uuid>> {
        let ids: Vec<String> = sqlx::query_scalar(BULK_BATCH_SQL)
            .bind(bulk.event_id)
            .bind(bulk.upto_seq)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        Ok(ids.iter().filter_map(|id| Uuid::parse_str(id).ok()).collect())
    }

    async fn bulk_progress(&self, id: Uuid, decided: u64, claimed_until: UnixMillis, finished: bool) -> Result<()> {
        sqlx::query(
            "UPDATE bulk_moderations SET done = MIN_OF(done + $1, total), claimed_until = $2,
                 state = CASE WHEN $3 THEN 'done' ELSE state END
             WHERE id = $4"
                .replace("MIN_OF", self.dialect.least())
                .as_str(),
        )
        .bind(decided as i64)
        .bind(claimed_until)
        .bind(finished)
        .bind(id.to_string())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn moderate(&self, host: HostDecision<'_>) -> Result<Option<MediaRow>> {
        let mut tx = self.write().await?;
        if host.decision == ModerationDecision::Approve {
            self.dialect.lock_wall(&mut tx).await?;
        }
        if !self.decide_in(&mut tx, &host).await? {
            tx.rollback().await?;
            return Ok(None);
        }
        tx.commit().await?;
        self.media(host.media_id).await
    }

    async fn moderate_many(
        &self,
        event_id: i64,
        ids: &[Uuid],
        decision: ModerationDecision,
        now: UnixMillis,
    ) -> Result<Vec<MediaRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.write().await?;
        if decision == ModerationDecision::Approve {
            self.dialect.lock_wall(&mut tx).await?;
        }
        if self.dialect == Dialect::Postgres {
            // Every row of the batch locked first, in one order, before the
            // event row that each decision's change number takes: a single
            // decision locks its one row, then the event row, so neither
            // waits on the other in a circle.
            let sql = format!(
                "SELECT id FROM media WHERE id IN ({}) ORDER BY id{}",
                placeholders(1, ids.len()),
                self.dialect.row_lock()
            );
            let mut query = sqlx::query(&sql);
            for id in ids {
                query = query.bind(id.to_string());
            }
            query.fetch_all(&mut *tx).await?;
        }
        let mut decided = Vec::new();
        for id in ids {
            let host = HostDecision { event_id, media_id: *id, decision, reason: None, now };
            if self.decide_in(&mut tx, &host).await? {
                decided.push(id.to_string());
            }
        }
        tx.commit().await?;
        if decided.is_empty() {
            return Ok(Vec::new());
        }
        let sql =
            format!("SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM} WHERE m.id IN ({})", placeholders(1, decided.len()));
        let mut query = sqlx::query(&sql);
        for id in &decided {
            query = query.bind(id.as_str());
        }
        query.fetch_all(&self.pool).await?.iter().map(media_from_row).collect()
    }

    async fn place_on_wall(&self, media_id: Uuid) -> Result<Option<MediaRow>> {
        let mut tx = self.write().await?;
        self.dialect.lock_wall(&mut tx).await?;
        let sql = format!(
            "SELECT moderation, wall_seq, event_id, {RENDITION_STATE} FROM media WHERE id = $1 AND removed_at IS NULL{}",
            self.dialect.row_lock()
        );
        let Some(row) = sqlx::query(&sql).bind(media_id.to_string()).fetch_optional(&mut *tx).await? else {
            tx.rollback().await?;
            return Ok(None);
        };
        let state: String = row.try_get("moderation")?;
        let wall = wall_of(&row)?;
        let placed = moderation::placed_once_settled(moderation_from_db(&state), wall);
        if placed {
            sqlx::query(&format!("UPDATE media SET wall_seq = {} WHERE id = $1", self.dialect.next_wall_seq()))
                .bind(media_id.to_string())
                .execute(&mut *tx)
                .await?;
        }
        if wall.rendition_settled {
            // Its preview is made (or is the placeholder): a change the
            // host's list hears of.
            let event_id: i64 = row.try_get("event_id")?;
            media_changed(&mut tx, event_id, Some(&media_id.to_string())).await?;
        } else if !placed {
            tx.rollback().await?;
            return Ok(None);
        }
        tx.commit().await?;
        if placed { self.media(media_id).await } else { Ok(None) }
    }

    async fn unplaced_on_wall(&self, limit: u32) -> Result<Vec<Uuid>> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT m.id FROM media m JOIN rendition_jobs j ON j.media_id = m.id
             WHERE m.moderation = 'approved' AND m.wall_seq IS NULL AND m.removed_at IS NULL
               AND j.state IN ('done', 'placeholder')
             LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(ids.iter().filter_map(|id| Uuid::parse_str(id).ok()).collect())
    }

    async fn wall_before_last(&self, event_id: i64, n: u32) -> Result<i64> {
        // The newest n positions by the index (event_id, wall_seq), from the
        // end: the smallest of them, less one.
        let first: Option<i64> =
            sqlx::query_scalar(WALL_BEFORE_LAST_SQL).bind(event_id).bind(i64::from(n)).fetch_one(&self.pool).await?;
        Ok(first.map_or(0, |seq| seq - 1))
    }

    async fn wall(&self, event_id: i64, after_seq: i64, limit: u32) -> Result<Vec<MediaRow>> {
        sqlx::query(&wall_sql())
            .bind(event_id)
            .bind(after_seq)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(media_from_row)
            .collect()
    }

    async fn counts(&self) -> Result<(u64, u64)> {
        let attempts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM attempts").fetch_one(&self.pool).await?;
        let media: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM media").fetch_one(&self.pool).await?;
        Ok((attempts as u64, media as u64))
    }

    async fn rotate_credential(&self, event_id: i64, credential: Credential, value: &str) -> Result<()> {
        let column = match credential {
            Credential::GuestCode => "guest_code",
            Credential::WallToken => "wall_token_hash",
            Credential::HostToken => "host_token_hash",
        };
        sqlx::query(&format!("UPDATE events SET {column} = $1 WHERE id = $2"))
            .bind(value)
            .bind(event_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn mark_event_deleted(&self, event_id: i64, now: UnixMillis) -> Result<bool> {
        let updated = sqlx::query("UPDATE events SET deleted_at = $1 WHERE id = $2 AND deleted_at IS NULL")
            .bind(now)
            .bind(event_id)
            .execute(&self.pool)
            .await?;
        Ok(updated.rows_affected() == 1)
    }

    async fn deleted_events(&self, limit: u32) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar("SELECT id FROM events WHERE deleted_at IS NOT NULL ORDER BY id LIMIT $1")
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?)
    }

    async fn event_attempts(&self, event_id: i64) -> Result<Vec<AttemptRow>> {
        let sql = format!("SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.event_id = $1 ORDER BY a.row_id");
        sqlx::query(&sql).bind(event_id).fetch_all(&self.pool).await?.iter().map(attempt_from_row).collect()
    }

    async fn purge_event_rows(&self, event_id: i64, late_delete_at: UnixMillis) -> Result<()> {
        let mut tx = self.write().await?;
        // Nothing of the event's is added meanwhile (its quotas' lock).
        self.dialect.lock_event(&mut tx, event_id).await?;
        sqlx::query(
            "INSERT INTO late_deletes (object_key, not_before)
             SELECT object_key, $2 FROM attempts WHERE event_id = $1
             ON CONFLICT (object_key) DO NOTHING",
        )
        .bind(event_id)
        .bind(late_delete_at)
        .execute(&mut *tx)
        .await?;
        for statement in [
            "DELETE FROM rendition_jobs WHERE media_id IN (SELECT id FROM media WHERE event_id = $1)",
            "DELETE FROM content_index WHERE event_id = $1",
            "DELETE FROM part_digests WHERE attempt_row_id IN (SELECT row_id FROM attempts WHERE event_id = $1)",
            "UPDATE attempts SET duplicate_of = NULL WHERE event_id = $1 AND duplicate_of IS NOT NULL",
            "DELETE FROM media WHERE event_id = $1",
            "DELETE FROM attempts WHERE event_id = $1",
            "DELETE FROM sessions WHERE event_id = $1",
            "DELETE FROM event_blocks WHERE event_id = $1",
            "DELETE FROM bulk_moderations WHERE event_id = $1",
            "DELETE FROM events WHERE id = $1 AND deleted_at IS NOT NULL",
        ] {
            sqlx::query(statement).bind(event_id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn due_late_deletes(&self, now: UnixMillis, limit: u32) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT object_key FROM late_deletes WHERE not_before <= $1 ORDER BY not_before, object_key LIMIT $2",
        )
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?)
    }

    async fn forget_late_delete(&self, object_key: &str) -> Result<()> {
        sqlx::query("DELETE FROM late_deletes WHERE object_key = $1").bind(object_key).execute(&self.pool).await?;
        Ok(())
    }

    async fn forget_ended(&self, cutoff: UnixMillis, limit: u32) -> Result<(u64, u64)> {
        const ENDED: &str = "SELECT a.row_id FROM attempts a
             WHERE a.state IN ('expired', 'rejected') AND a.object_deleted = TRUE AND a.expires_at < $1
               AND NOT EXISTS (SELECT 1 FROM media m WHERE m.attempt_row_id = a.row_id)
             ORDER BY a.row_id LIMIT $2";
        let mut tx = self.write().await?;
        // The events' attempt counts are of the rows they hold: what is
        // forgotten here stops counting (an event filled by abuse comes back
        // once its ended attempts are forgotten).
        sqlx::query(&format!(
            "UPDATE events SET attempt_count = attempt_count
                 - (SELECT COUNT(*) FROM attempts a WHERE a.event_id = events.id AND a.row_id IN ({ENDED}))
             WHERE id IN (SELECT a.event_id FROM attempts a WHERE a.row_id IN ({ENDED}))"
        ))
        .bind(cutoff)
        .bind(i64::from(limit))
        .execute(&mut *tx)
        .await?;
        sqlx::query(&format!("DELETE FROM part_digests WHERE attempt_row_id IN ({ENDED})"))
            .bind(cutoff)
            .bind(i64::from(limit))
            .execute(&mut *tx)
            .await?;
        let attempts = sqlx::query(&format!("DELETE FROM attempts WHERE row_id IN ({ENDED})"))
            .bind(cutoff)
            .bind(i64::from(limit))
            .execute(&mut *tx)
            .await?
            .rows_affected();
        let sessions = sqlx::query(
            "DELETE FROM sessions WHERE id IN (
                 SELECT s.id FROM sessions s
                 WHERE s.expires_at < $1 AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.session_id = s.id)
                 ORDER BY s.id LIMIT $2)",
        )
        .bind(cutoff)
        .bind(i64::from(limit))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok((attempts, sessions))
    }

    async fn remove_rejected(&self, cutoff: UnixMillis, now: UnixMillis) -> Result<u64> {
        // One transaction: a removed media stops standing for its bytes in
        // the event's content index at once (the same photo shared again is
        // stored again, not confirmed as a duplicate of what is gone).
        let mut tx = self.write().await?;
        let updated = sqlx::query(
            "UPDATE media SET removed_at = $1
             WHERE moderation = 'rejected' AND rejected_at <= $2 AND removed_at IS NULL",
        )
        .bind(now)
        .bind(cutoff)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM content_index WHERE media_id IN (SELECT id FROM media WHERE removed_at IS NOT NULL)")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(updated.rows_affected())
    }

    async fn removed_media_with_objects(&self, limit: u32) -> Result<Vec<MediaRow>> {
        let sql = format!(
            "SELECT {MEDIA_COLUMNS} FROM {MEDIA_FROM}
             WHERE m.removed_at IS NOT NULL AND m.objects_deleted = FALSE ORDER BY m.removed_at, m.id LIMIT $1"
        );
        sqlx::query(&sql).bind(i64::from(limit)).fetch_all(&self.pool).await?.iter().map(media_from_row).collect()
    }

    async fn mark_media_objects_deleted(&self, id: Uuid) -> Result<()> {
        sqlx::query("UPDATE media SET objects_deleted = TRUE WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn deduplicated(&self, event_id: i64) -> Result<u64> {
        self.count_deduplicated(event_id).await
    }

    async fn duplicate_objects(&self, now: UnixMillis, limit: u32) -> Result<Vec<AttemptRow>> {
        self.duplicates_with_objects(now, limit).await
    }
}
