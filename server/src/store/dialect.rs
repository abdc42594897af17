//! What really differs between the two SQL databases the store runs on.
//! Every statement is written once (in [`super::sql`]); this is the rest:
//! how a write transaction begins, how an attempt's row is locked, how wall
//! positions are handed out, and how connections are set up.
//!
//! Placeholders are not among the differences: both drivers take `$1`,
//! `$2`, … (SQLite reads `$N` as the N-th argument).

use std::str::FromStr;
use std::time::Duration;

use sqlx::AnyConnection;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;

use crate::error::{Error, Result};
use crate::ops::LOCK_WAIT;

/// The advisory lock key that serialises migrations on PostgreSQL
/// ("upload-o" in ASCII).
const MIGRATION_LOCK: i64 = 0x7570_6c6f_6164_2d6f;
/// The advisory lock key that serialises handing out wall positions on
/// PostgreSQL.
const WALL_LOCK: i64 = MIGRATION_LOCK + 1;

/// The first key of the two-key advisory locks that serialise quota checks
/// per event on PostgreSQL (a key space apart from the one-key locks above).
const EVENT_LOCK_CLASS: i32 = 0x7570_6c6f; // "uplo"

/// SQLite's schema, embedded and checksummed (`server/migrations/sqlite/`).
static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
/// PostgreSQL's schema (`server/migrations/postgres/`), same versions.
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// A SQL database the record store runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite in WAL mode, `synchronous = FULL`: one machine.
    Sqlite,
    /// PostgreSQL: several instances over one database.
    Postgres,
}

impl Dialect {
    /// The dialect a database URL names: `sqlite:…`, `postgres://…` or
    /// `postgresql://…`.
    pub fn of_url(url: &str) -> Option<Dialect> {
        if url.starts_with("sqlite:") {
            Some(Dialect::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Dialect::Postgres)
        } else {
            None
        }
    }

    /// The statement that opens a write transaction. SQLite's `IMMEDIATE`
    /// takes the database's write lock at once, so what the transaction
    /// reads stays true until it commits: that is SQLite's row lock.
    /// PostgreSQL locks rows as it goes (`SELECT … FOR UPDATE`).
    pub fn begin_write(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        }
    }

    /// What ends the `SELECT` that locks an attempt's row inside a write
    /// transaction: PostgreSQL's `FOR UPDATE` waits for any other holder;
    /// SQLite already holds the write lock.
    pub(crate) fn row_lock(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// The next wall position, as a SQL expression. PostgreSQL takes it
    /// from a sequence; SQLite, under its write lock, from the largest one
    /// handed out.
    /// The function that takes the least of its arguments.
    pub(crate) fn least(self) -> &'static str {
        match self {
            Dialect::Sqlite => "MIN",
            Dialect::Postgres => "LEAST",
        }
    }

    pub(crate) fn next_wall_seq(self) -> &'static str {
        match self {
            Dialect::Sqlite => "(SELECT COALESCE(MAX(wall_seq), 0) + 1 FROM media)",
            Dialect::Postgres => "nextval('media_wall_seq')",
        }
    }

    /// Makes the transaction on `conn` the only one handing out wall
    /// positions until it ends, so positions become visible in the order
    /// they were handed out and a wall cursor never skips an item committed
    /// late. PostgreSQL takes a transaction-scoped advisory lock; SQLite's
    /// write lock already does this.
    pub(crate) async fn lock_wall(self, conn: &mut AnyConnection) -> Result<()> {
        if self == Dialect::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(WALL_LOCK).execute(conn).await?;
        }
        Ok(())
    }

    /// Makes the transaction on `conn` the only one adding sessions or
    /// attempts to this event until it ends, so quotas are counted and kept
    /// in one step. PostgreSQL takes a transaction-scoped advisory lock (two
    /// keys: this class, the event); SQLite's write lock already does this.
    pub(crate) async fn lock_event(self, conn: &mut AnyConnection, event_id: i64) -> Result<()> {
        if self == Dialect::Postgres {
            // Events whose ids agree in their low 31 bits share a lock: they
            // only wait for each other, never count wrong.
            sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
                .bind(EVENT_LOCK_CLASS)
                .bind((event_id & 0x7fff_ffff) as i32)
                .execute(conn)
                .await?;
        }
        Ok(())
    }

    /// Makes the transaction on `conn` the only one migrating until it
    /// ends, so instances starting together migrate once. PostgreSQL takes
    /// a transaction-scoped advisory lock; SQLite's write lock
    /// ([`Dialect::begin_write`]) already does this.
    pub(crate) async fn lock_migrations(self, conn: &mut AnyConnection) -> Result<()> {
        if self == Dialect::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(MIGRATION_LOCK).execute(conn).await?;
        }
        Ok(())
    }

    /// The schema's migrations.
    pub(crate) fn migrations(self) -> &'static Migrator {
        match self {
            Dialect::Sqlite => &SQLITE_MIGRATIONS,
            Dialect::Postgres => &POSTGRES_MIGRATIONS,
        }
    }

    /// Connection options for `url`. A SQLite file is created when missing
    /// (unless the URL says otherwise with `mode=`).
    pub(crate) fn connect_options(self, url: &str) -> Result<AnyConnectOptions> {
        let mut options = AnyConnectOptions::from_str(url)?;
        let url = &mut options.database_url;
        if self == Dialect::Sqlite && !is_memory(url.as_str()) && !url.query_pairs().any(|(k, _)| k == "mode") {
            url.query_pairs_mut().append_pair("mode", "rwc");
        }
        Ok(options)
    }

    /// The statements every new connection runs before its first use.
    pub(crate) fn session_setup(self, url: &str) -> String {
        let lock_wait = LOCK_WAIT.as_millis();
        match self {
            // The busy timeout: a write that cannot get the lock soon is a
            // retryable 503. FULL: a confirm answered 200 survives a power
            // cut. WAL: readers never wait for the writer.
            Dialect::Sqlite => format!(
                "PRAGMA busy_timeout = {lock_wait}; PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA journal_mode = {};",
                if is_memory(url) { "MEMORY" } else { "WAL" }
            ),
            // A write that cannot get its lock soon is a retryable 503.
            Dialect::Postgres => {
                format!("SET lock_timeout = '{lock_wait}ms'; SET application_name = 'upload-once-server';")
            }
        }
    }

    /// The pool's size and lifetimes; acquiring a connection waits at most
    /// [`LOCK_WAIT`], so a database that does not answer is a retryable 503,
    /// soon.
    pub(crate) fn pool_options(self, url: &str) -> AnyPoolOptions {
        let options = AnyPoolOptions::new().acquire_timeout(LOCK_WAIT);
        match self {
            // An in-memory database lives in its one connection.
            Dialect::Sqlite if is_memory(url) => {
                options.max_connections(1).min_connections(1).idle_timeout(None).max_lifetime(None)
            }
            Dialect::Sqlite => options
                .max_connections(8)
                .min_connections(0)
                .idle_timeout(Some(Duration::from_secs(600)))
                .max_lifetime(Some(Duration::from_secs(3600))),
            Dialect::Postgres => options
                .max_connections(16)
                .min_connections(0)
                .idle_timeout(Some(Duration::from_secs(600)))
                .max_lifetime(Some(Duration::from_secs(3600))),
        }
    }
}

fn is_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// The dialect of a URL, or the configuration error that names the ones
/// there are.
pub(crate) fn dialect_of(url: &str) -> Result<Dialect> {
    Dialect::of_url(url).ok_or_else(|| {
        Error::Config(format!(
            "unsupported --database-url `{url}` (use sqlite://path, sqlite::memory: or postgres://user:password@host/database)"
        ))
    })
}
