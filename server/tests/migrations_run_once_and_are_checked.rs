//! The schema is migrated by `sqlx::migrate!`: each applied migration is
//! recorded with the SHA-384 of its file and checked at every start; a
//! database a newer server migrated is refused; instances starting together
//! migrate once.

use crate::support;

use sha2::{Digest, Sha384};
use sqlx::{AnyConnection, Connection};
use support::{fresh_database_url, is_postgres};
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
            (46, "videos", include_str!("../migrations/postgres/0046_videos.sql")),
            (47, "change cursor", include_str!("../migrations/postgres/0047_change_cursor.sql")),
            (48, "bulk moderations", include_str!("../migrations/postgres/0048_bulk_moderations.sql")),
            (49, "growth costs", include_str!("../migrations/postgres/0049_growth_costs.sql")),
            (50, "kept bytes", include_str!("../migrations/postgres/0050_kept_bytes.sql")),
            (51, "file counts", include_str!("../migrations/postgres/0051_file_counts.sql")),
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
            (46, "videos", include_str!("../migrations/sqlite/0046_videos.sql")),
            (47, "change cursor", include_str!("../migrations/sqlite/0047_change_cursor.sql")),
            (48, "bulk moderations", include_str!("../migrations/sqlite/0048_bulk_moderations.sql")),
            (49, "growth costs", include_str!("../migrations/sqlite/0049_growth_costs.sql")),
            (50, "kept bytes", include_str!("../migrations/sqlite/0050_kept_bytes.sql")),
            (51, "file counts", include_str!("../migrations/sqlite/0051_file_counts.sql")),
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

#[tokio::test]
async fn a_database_a_newer_server_migrated_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let store = SqlStore::open(&url).await.unwrap();
    store.pool().close().await;

    // As if a newer server had applied a migration this one lacks.
    let mut conn = connect(&url).await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (99, 'from a newer server', TRUE, $1, 0)",
    )
    .bind(vec![0u8; 48])
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

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
