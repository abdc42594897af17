//! The schema is migrated by `sqlx::migrate!`: each applied migration is
//! recorded with the SHA-384 of its file and checked at every start; a
//! database made by the hand-rolled migrations of earlier versions
//! (`schema_migrations`) is bridged, keeping its records; instances starting
//! together migrate once.

use crate::support;

use sha2::{Digest, Sha384};
use sqlx::{AnyConnection, Connection};
use support::{fresh_database_url, is_postgres};
use upload_once_core::wire::Dedup;
use upload_once_server::store::RecordStore;
use upload_once_server::store::sql::SqlStore;

/// The migration files of the dialect this run uses, as (version, name,
/// SQL).
fn migration_files() -> Vec<(i64, &'static str, &'static str)> {
    if is_postgres() {
        vec![
            (1, "init", include_str!("../migrations/postgres/0001_init.sql")),
            (2, "readiness", include_str!("../migrations/postgres/0002_readiness.sql")),
            (3, "multipart", include_str!("../migrations/postgres/0003_multipart.sql")),
            (4, "dedup", include_str!("../migrations/postgres/0004_dedup.sql")),
            (10, "renditions", include_str!("../migrations/postgres/0010_renditions.sql")),
            (20, "attempt ids unique", include_str!("../migrations/postgres/0020_attempt_ids_unique.sql")),
            (40, "takedowns", include_str!("../migrations/postgres/0040_takedowns.sql")),
            (41, "late deletes", include_str!("../migrations/postgres/0041_late_deletes.sql")),
            (42, "render budget", include_str!("../migrations/postgres/0042_render_budget.sql")),
            (43, "withdrawals", include_str!("../migrations/postgres/0043_withdrawals.sql")),
            (44, "short reservations", include_str!("../migrations/postgres/0044_short_reservations.sql")),
            (45, "revocations", include_str!("../migrations/postgres/0045_revocations.sql")),
        ]
    } else {
        vec![
            (1, "init", include_str!("../migrations/sqlite/0001_init.sql")),
            (2, "readiness", include_str!("../migrations/sqlite/0002_readiness.sql")),
            (3, "multipart", include_str!("../migrations/sqlite/0003_multipart.sql")),
            (4, "dedup", include_str!("../migrations/sqlite/0004_dedup.sql")),
            (10, "renditions", include_str!("../migrations/sqlite/0010_renditions.sql")),
            (20, "attempt ids unique", include_str!("../migrations/sqlite/0020_attempt_ids_unique.sql")),
            (40, "takedowns", include_str!("../migrations/sqlite/0040_takedowns.sql")),
            (41, "late deletes", include_str!("../migrations/sqlite/0041_late_deletes.sql")),
            (42, "render budget", include_str!("../migrations/sqlite/0042_render_budget.sql")),
            (43, "withdrawals", include_str!("../migrations/sqlite/0043_withdrawals.sql")),
            (44, "short reservations", include_str!("../migrations/sqlite/0044_short_reservations.sql")),
            (45, "revocations", include_str!("../migrations/sqlite/0045_revocations.sql")),
        ]
    }
}

/// A connection of the test's own (a SQLite file is created if missing).
async fn connect(url: &str) -> AnyConnection {
    sqlx::any::install_default_drivers();
    let url = if url.starts_with("sqlite:") { format!("{url}?mode=rwc") } else { url.to_owned() };
    AnyConnection::connect(&url).await.unwrap()
}

/// What `_sqlx_migrations` records: (version, description, checksum,
/// success).
async fn applied(url: &str) -> Vec<(i64, String, Vec<u8>, bool)> {
    let mut conn = connect(url).await;
    let rows: Vec<(i64, String, Vec<u8>, i64)> = sqlx::query_as(
        "SELECT version, description, checksum, CAST(CASE WHEN success THEN 1 ELSE 0 END AS BIGINT) FROM _sqlx_migrations ORDER BY version",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    rows.into_iter().map(|(v, d, c, success)| (v, d, c, success == 1)).collect()
}

/// Every migration file, recorded as applied with its own SHA-384.
fn every_file_applied() -> Vec<(i64, String, Vec<u8>, bool)> {
    migration_files()
        .into_iter()
        .map(|(v, name, sql)| (v, name.to_owned(), Sha384::digest(sql).to_vec(), true))
        .collect()
}

/// The versions the hand-rolled migrations of earlier servers knew.
const LEGACY_VERSIONS: i64 = 2;

/// Makes the database the way servers before sqlx migrations did: the
/// files of their era run by hand, recorded in `schema_migrations`, with one
/// event in it.
async fn make_legacy_database(url: &str, extra_legacy_version: Option<(i64, &str)>) {
    let mut conn = connect(url).await;
    let integer = if is_postgres() { "BIGINT" } else { "INTEGER" };
    sqlx::raw_sql(&format!(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version {integer} PRIMARY KEY, name TEXT NOT NULL, applied_at {integer} NOT NULL)"
    ))
    .execute(&mut conn)
    .await
    .unwrap();
    let mut versions: Vec<(i64, String)> = Vec::new();
    for (version, name, sql) in migration_files().into_iter().filter(|(v, ..)| *v <= LEGACY_VERSIONS) {
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
        versions.push((version, name.to_owned()));
    }
    versions.extend(extra_legacy_version.map(|(v, n)| (v, n.to_owned())));
    for (version, name) in versions {
        sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, 1700000000)")
            .bind(version)
            .bind(name)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    sqlx::query(
        "INSERT INTO events (slug, title, max_file_bytes, allowed_types, moderation, guest_code, host_token_hash, wall_token_hash, created_at)
         VALUES ('legacy', 'Made before sqlx', 1000, '[\"image/*\"]', 'required', 'code', 'host-hash', 'wall-hash', 1700000000000)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn a_database_made_by_the_hand_rolled_migrations_is_bridged_and_keeps_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    make_legacy_database(&url, None).await;
    assert!(
        !applied_table_exists(&url).await,
        "the legacy database has no sqlx record yet (or the bridge would have nothing to do)"
    );

    let store = SqlStore::open(&url).await.expect("a legacy database opens");
    let event = store.event_by_slug("legacy").await.unwrap().expect("the legacy event is still there");
    assert_eq!(event.title, "Made before sqlx");
    assert_eq!(event.dedup, Dedup::None, "an event made before the content index keeps every upload");
    assert_eq!(
        applied(&url).await,
        every_file_applied(),
        "the legacy versions, recorded with their files' checksums, and the later ones applied"
    );
    // The migrated schema takes writes (the readiness table came from
    // migration 2, recorded by the bridge, not run twice).
    store.probe_write(1).await.unwrap();
    store.pool().close().await;

    // Every later start checks those checksums and changes nothing.
    let again = SqlStore::open(&url).await.expect("a bridged database opens again");
    assert_eq!(applied(&url).await, every_file_applied());
    again.pool().close().await;
}

async fn applied_table_exists(url: &str) -> bool {
    let mut conn = connect(url).await;
    let sql = if is_postgres() {
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
    } else {
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
    };
    let n: i64 = sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    n == 1
}

#[tokio::test]
async fn a_legacy_record_of_a_migration_this_server_lacks_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    make_legacy_database(&url, Some((99, "from_a_newer_server"))).await;
    let error = SqlStore::open(&url).await.expect_err("a schema newer than this server is refused").to_string();
    assert!(error.contains("migration 99"), "{error}");
}

#[tokio::test]
async fn a_migration_changed_after_it_was_applied_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let store = SqlStore::open(&url).await.unwrap();
    store.pool().close().await;
    assert_eq!(applied(&url).await, every_file_applied(), "a fresh database records every file with its checksum");

    // As if 0001_init.sql had been edited after this database ran it.
    let mut conn = connect(&url).await;
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 1")
        .bind(vec![0u8; 48])
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();

    let error = SqlStore::open(&url).await.expect_err("a changed migration is refused").to_string();
    assert!(error.contains("migration 1") && error.contains("modified"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn instances_starting_together_migrate_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let opens = futures_util::future::join_all((0..6).map(|_| SqlStore::open(&url))).await;
    for open in &opens {
        assert!(open.is_ok(), "every instance starts: {:?}", open.as_ref().err());
    }
    for store in opens.into_iter().flatten() {
        store.pool().close().await;
    }
    assert_eq!(applied(&url).await, every_file_applied(), "each migration applied and recorded once");
}
