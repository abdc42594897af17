//! Rendition jobs: one row per media record in `rendition_jobs`, made by
//! the confirm that makes the record, by a scan for recent media without
//! one (every [`MediaSettings::scan_interval`]; through every media once
//! when an instance starts), and at once when a rendition is asked for;
//! run by a bounded pool of
//! workers ([`MediaSettings::workers`]), off the request path.
//!
//! A worker *claims* a job with one `UPDATE … RETURNING`: it becomes
//! `running` with a lease (`due_at`), renewed while the worker works. A job
//! whose worker died (a crash, a kill, a lost instance) is claimed again
//! once its lease has run out; `tries` counts the claims and fences a late
//! finish of an earlier one. A job ends `done` (both renditions stored) or
//! `placeholder` (with the reason: not a photo, not decodable, too large,
//! or [`MAX_TRIES`] claims that each failed to reach the stores). A failure
//! to reach a store puts the job back in the queue for later.
//!
//! This is the job table and the wake-ups; the scanner and the workers that
//! run the jobs are in services/renditions.rs.
//!
//! [`MediaSettings::scan_interval`]: super::MediaSettings::scan_interval
//! [`MediaSettings::workers`]: super::MediaSettings::workers

use std::time::Duration;

use sqlx::{AnyPool, Row};
use tokio::sync::{Notify, watch};
use upload_once_core::time::UnixMillis;
use uuid::Uuid;

use crate::error::Result;

/// Claims of one job before it is given the placeholder.
pub const MAX_TRIES: i64 = 5;
/// Media scanned for a missing job at once.
const SCAN_BATCH: i64 = 500;
/// The window a session's rendition budget is counted over.
pub const BUDGET_WINDOW: Duration = Duration::from_secs(3600);
/// How long a job over its session's budget waits before it is looked at
/// again.
pub const DEFER: Duration = Duration::from_secs(60);
/// The reason a deferred job carries while it waits (not shown: it is
/// `pending`).
const DEFERRED: &str = "waiting for its guest's rendition budget";

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for a worker (or for its retry time).
    Queued,
    /// A worker has it (until its lease runs out).
    Running,
    /// Both renditions are stored.
    Done,
    /// There is no rendition; the placeholder stands for it, with a reason.
    Placeholder,
}

impl JobState {
    fn parse(text: &str) -> JobState {
        match text {
            "running" => JobState::Running,
            "done" => JobState::Done,
            "placeholder" => JobState::Placeholder,
            _ => JobState::Queued,
        }
    }

    /// The word the API uses: `pending`, `ready` or `placeholder`.
    pub fn as_api(self) -> &'static str {
        match self {
            JobState::Queued | JobState::Running => "pending",
            JobState::Done => "ready",
            JobState::Placeholder => "placeholder",
        }
    }
}

/// A job as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRow {
    /// The media record.
    pub media_id: Uuid,
    /// Its state.
    pub state: JobState,
    /// How many times it was claimed.
    pub tries: i64,
    /// Why there is no rendition (placeholder), or the last failure.
    pub reason: Option<String>,
    /// The display rendition's size, once done.
    pub width: Option<i64>,
    /// The display rendition's height, once done.
    pub height: Option<i64>,
    /// The original's pixels, once its header was read.
    pub pixels: Option<i64>,
    /// When its decode began (none: no pixel of it was decoded).
    pub decoded_at: Option<i64>,
    /// A video's duration, once done.
    pub duration_ms: Option<i64>,
}

/// What a job that ended `done` made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Made {
    /// The display rendition's width (a video's, as shown).
    pub width: u32,
    /// The display rendition's height.
    pub height: u32,
    /// A video's duration.
    pub duration_ms: Option<i64>,
}

/// How a job that ended `placeholder` ended: why, and the poster a video
/// got all the same (one over the length limit: a poster, no shareable
/// copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placeholder {
    /// Why there is no rendition (a fixed sentence: the host's card shows it).
    pub reason: String,
    /// A video's poster, when one was made: its thumbnail is served.
    pub poster: Option<Made>,
}

/// A job a worker holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimed {
    /// The media record.
    pub media_id: Uuid,
    /// The claim's number (fences a finish by an earlier claim).
    pub tries: i64,
    /// The original's pixels, once a claim has read its header.
    pub pixels: Option<i64>,
}

fn job_from_row(row: &sqlx::any::AnyRow) -> Result<JobRow> {
    let id: String = row.try_get("media_id")?;
    let state: String = row.try_get("state")?;
    Ok(JobRow {
        media_id: Uuid::parse_str(&id).map_err(|e| crate::error::Error::Database(sqlx::Error::Decode(Box::new(e))))?,
        state: JobState::parse(&state),
        tries: row.try_get("tries")?,
        reason: row.try_get("reason")?,
        width: row.try_get("width")?,
        height: row.try_get("height")?,
        pixels: row.try_get("pixels")?,
        decoded_at: row.try_get("decoded_at")?,
        duration_ms: row.try_get("duration_ms")?,
    })
}

/// The media features' own reads and writes (the job table; the wall's
/// newest position), over the records' pool, in SQL both databases take.
#[derive(Clone, Debug)]
pub struct MediaDb {
    pool: AnyPool,
}

impl MediaDb {
    /// Over this pool.
    pub fn new(pool: AnyPool) -> MediaDb {
        MediaDb { pool }
    }

    /// Makes a queued job for each media record that has none (at most
    /// [`SCAN_BATCH`]), among those created after `since` (by the index
    /// `media_created`), or among all of them; how many were made.
    pub async fn enqueue_missing(&self, now: UnixMillis, since: Option<UnixMillis>) -> Result<u64> {
        let done = sqlx::query(
            "INSERT INTO rendition_jobs (media_id, state, tries, due_at, created_at)
             SELECT m.id, 'queued', 0, $1, $1 FROM media m
             WHERE m.created_at > $3 AND NOT EXISTS (SELECT 1 FROM rendition_jobs j WHERE j.media_id = m.id)
             ORDER BY m.created_at LIMIT $2
             ON CONFLICT (media_id) DO NOTHING",
        )
        .bind(now)
        .bind(SCAN_BATCH)
        .bind(since.unwrap_or(i64::MIN))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Makes the job of one media record if it has none.
    pub async fn enqueue(&self, media_id: Uuid, now: UnixMillis) -> Result<()> {
        sqlx::query(
            "INSERT INTO rendition_jobs (media_id, state, tries, due_at, created_at)
             SELECT m.id, 'queued', 0, $2, $2 FROM media m WHERE m.id = $1
             ON CONFLICT (media_id) DO NOTHING",
        )
        .bind(media_id.to_string())
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Takes the job due first (queued and due, or running with its lease
    /// run out) for `lease`, of a guest session none of whose jobs a worker
    /// holds: one session takes one worker at most, whatever it uploads.
    pub async fn claim(&self, now: UnixMillis, lease: Duration) -> Result<Option<Claimed>> {
        let row = sqlx::query(
            "UPDATE rendition_jobs SET state = 'running', tries = tries + 1, due_at = $1
             WHERE media_id = (SELECT j.media_id FROM rendition_jobs j
                               JOIN media m ON m.id = j.media_id
                               JOIN attempts a ON a.row_id = m.attempt_row_id
                               WHERE j.state IN ('queued', 'running') AND j.due_at <= $2
                                 AND NOT EXISTS (
                                     SELECT 1 FROM rendition_jobs h
                                     JOIN media hm ON hm.id = h.media_id
                                     JOIN attempts ha ON ha.row_id = hm.attempt_row_id
                                     WHERE ha.session_id = a.session_id AND h.state = 'running'
                                       AND h.due_at > $2 AND h.media_id <> j.media_id)
                               ORDER BY j.due_at LIMIT 1)
               AND state IN ('queued', 'running') AND due_at <= $2
             RETURNING media_id, tries, pixels",
        )
        .bind(now + lease.as_millis() as i64)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let id: String = row.try_get("media_id")?;
        Ok(Uuid::parse_str(&id).ok().map(|media_id| Claimed {
            media_id,
            tries: row.try_get("tries").unwrap_or(0),
            pixels: row.try_get("pixels").unwrap_or(None),
        }))
    }

    /// Moves a held job's lease to `until`; false when the claim is no
    /// longer this worker's.
    pub async fn renew(&self, job: Claimed, until: UnixMillis) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE rendition_jobs SET due_at = $1 WHERE media_id = $2 AND state = 'running' AND tries = $3",
        )
        .bind(until)
        .bind(job.media_id.to_string())
        .bind(job.tries)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Ends a held job: `done` with the display size, or `placeholder` with
    /// the reason (and a video's poster's size, if it got one). False when
    /// the claim was no longer the job's (its lease ran out and another
    /// claim holds it, or ended it): nothing changed.
    pub async fn finish(&self, job: Claimed, outcome: &Result<Made, Placeholder>, now: UnixMillis) -> Result<bool> {
        let (state, reason, made) = match outcome {
            Ok(made) => ("done", None, Some(*made)),
            Err(p) => ("placeholder", Some(p.reason.as_str()), p.poster),
        };
        let ended = sqlx::query(
            "UPDATE rendition_jobs SET state = $1, reason = $2, width = $3, height = $4, duration_ms = $8, finished_at = $5
             WHERE media_id = $6 AND state = 'running' AND tries = $7",
        )
        .bind(state)
        .bind(reason)
        .bind(made.map(|s| i64::from(s.width)))
        .bind(made.map(|s| i64::from(s.height)))
        .bind(now)
        .bind(job.media_id.to_string())
        .bind(job.tries)
        .bind(made.and_then(|s| s.duration_ms))
        .execute(&self.pool)
        .await?;
        Ok(ended.rows_affected() == 1)
    }

    /// The pixels whose decode began at or after `since` for the other
    /// media of the guest session that uploaded this one.
    pub async fn session_pixels(&self, media_id: Uuid, since: UnixMillis) -> Result<i64> {
        let row = sqlx::query(
            "SELECT CAST(COALESCE(SUM(CASE WHEN j.decoded_at >= $2 THEN j.pixels ELSE 0 END), 0) AS BIGINT) AS used
             FROM rendition_jobs j
             JOIN media m ON m.id = j.media_id
             JOIN attempts a ON a.row_id = m.attempt_row_id
             WHERE a.session_id = (SELECT a2.session_id FROM media m2
                                   JOIN attempts a2 ON a2.row_id = m2.attempt_row_id WHERE m2.id = $1)
               AND j.media_id <> $1",
        )
        .bind(media_id.to_string())
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("used")?)
    }

    /// Records a held job's pixels, read from its original's header, and
    /// with `decoded_at` that its decode began then: from then on they
    /// count against its session's budget.
    pub async fn record_pixels(&self, job: Claimed, pixels: i64, decoded_at: Option<UnixMillis>) -> Result<()> {
        sqlx::query(
            "UPDATE rendition_jobs SET pixels = $1, decoded_at = COALESCE($2, decoded_at)
             WHERE media_id = $3 AND state = 'running' AND tries = $4",
        )
        .bind(pixels)
        .bind(decoded_at)
        .bind(job.media_id.to_string())
        .bind(job.tries)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Puts a held job back in the queue until `at` without counting its
    /// claim as a try: its session is over its rendition budget.
    pub async fn defer(&self, job: Claimed, at: UnixMillis) -> Result<()> {
        sqlx::query(
            "UPDATE rendition_jobs SET state = 'queued', due_at = $1, tries = tries - 1, reason = $2
             WHERE media_id = $3 AND state = 'running' AND tries = $4",
        )
        .bind(at)
        .bind(DEFERRED)
        .bind(job.media_id.to_string())
        .bind(job.tries)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Puts a held job back in the queue, due at `at`, with the failure.
    pub async fn retry_later(&self, job: Claimed, at: UnixMillis, reason: &str) -> Result<()> {
        sqlx::query(
            "UPDATE rendition_jobs SET state = 'queued', due_at = $1, reason = $2
             WHERE media_id = $3 AND state = 'running' AND tries = $4",
        )
        .bind(at)
        .bind(reason)
        .bind(job.media_id.to_string())
        .bind(job.tries)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Puts back in the queue, as new, the jobs that ended on the
    /// placeholder for one of these reasons (a tool that was missing and is
    /// here now); how many.
    pub async fn requeue_placeholders(&self, reasons: &[String], now: UnixMillis) -> Result<u64> {
        let mut requeued = 0;
        for reason in reasons {
            let done = sqlx::query(
                "UPDATE rendition_jobs SET state = 'queued', tries = 0, reason = NULL, due_at = $1
                 WHERE state = 'placeholder' AND reason = $2",
            )
            .bind(now)
            .bind(reason)
            .execute(&self.pool)
            .await?;
            requeued += done.rows_affected();
        }
        Ok(requeued)
    }

    /// The jobs of these media records (those that have one).
    pub async fn jobs(&self, ids: &[Uuid]) -> Result<Vec<JobRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = (1..=ids.len()).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "SELECT media_id, state, tries, reason, width, height, pixels, decoded_at, duration_ms
             FROM rendition_jobs WHERE media_id IN ({list})"
        );
        let mut query = sqlx::query(&sql);
        for id in ids {
            query = query.bind(id.to_string());
        }
        query.fetch_all(&self.pool).await?.iter().map(job_from_row).collect()
    }

    /// The job of one media record.
    pub async fn job(&self, id: Uuid) -> Result<Option<JobRow>> {
        Ok(self.jobs(&[id]).await?.pop())
    }

    /// The newest wall position of an event (0 when nothing was approved).
    pub async fn max_wall_seq(&self, event_id: i64) -> Result<i64> {
        let max: Option<i64> = sqlx::query_scalar("SELECT MAX(wall_seq) FROM media WHERE event_id = $1")
            .bind(event_id)
            .fetch_one(&self.pool)
            .await?;
        Ok(max.unwrap_or(0))
    }
}

/// Wake-ups between the handlers and the workers on one instance.
#[derive(Debug)]
pub struct JobEvents {
    pub(crate) wake: Notify,
    finished: watch::Sender<u64>,
}

impl Default for JobEvents {
    fn default() -> Self {
        JobEvents { wake: Notify::new(), finished: watch::Sender::new(0) }
    }
}

impl JobEvents {
    /// Wakes the scanner and the idle workers (new media, a job asked for).
    pub fn wake(&self) {
        self.wake.notify_waiters();
    }

    /// Tells waiting requests that a job ended.
    pub fn finished(&self) {
        self.finished.send_modify(|n| *n += 1);
    }

    /// A receiver that changes whenever a job ends on this instance.
    pub fn watch_finished(&self) -> watch::Receiver<u64> {
        self.finished.subscribe()
    }
}

/// Why a content type gets the placeholder.
pub fn reason_for_type(content_type: &str) -> String {
    if content_type.starts_with("video/") {
        "videos are not made shareable on this server".to_owned()
    } else if content_type.starts_with("image/") {
        format!("{content_type} photos cannot be decoded by this server")
    } else {
        format!("{content_type} is not a photo")
    }
}
