//! Schema migrations: `sqlx::migrate!` embeds `server/migrations/<dialect>/`
//! with a checksum per file, and records what it applied in
//! `_sqlx_migrations`. A database whose applied migration no longer matches
//! its file (or that has one this server does not know) is refused at
//! start rather than run half-understood.
//!
//! Databases made before sqlx ran the migrations carry their own record,
//! `schema_migrations` (version, name): [`migrate`] bridges it once by
//! recording those versions as applied in `_sqlx_migrations`, with the
//! checksums of the same files. `schema_migrations` is left in place (an
//! older server can still start on the database) and never read again once
//! bridged.

use sqlx::migrate::{Migrate, MigrateError};
use sqlx::{AnyConnection, AnyPool};

use super::dialect::Dialect;
use crate::error::Result;

/// The table the hand-rolled migrations of earlier versions kept.
const LEGACY_TABLE: &str = "schema_migrations";

/// Brings the schema up to date: one transaction that holds the dialect's
/// migration lock (so instances starting together migrate once), bridges a
/// legacy record, then lets sqlx check every applied migration's checksum
/// and apply the missing ones.
pub async fn migrate(pool: &AnyPool, dialect: Dialect) -> Result<()> {
    let mut tx = pool.begin_with(dialect.begin_write()).await?;
    dialect.lock_migrations(&mut tx).await?;
    bridge_legacy_record(&mut tx, dialect).await?;
    dialect.migrations().run(&mut *tx).await.map_err(sqlx::Error::from)?;
    tx.commit().await?;
    Ok(())
}

/// Records the migrations `schema_migrations` lists as applied in sqlx's
/// table, with the checksums of the embedded files of the same version and
/// name. A version this server does not know, or knows by another name, is
/// refused.
async fn bridge_legacy_record(conn: &mut AnyConnection, dialect: Dialect) -> Result<()> {
    let tables: i64 = sqlx::query_scalar(dialect.count_tables_named()).bind(LEGACY_TABLE).fetch_one(&mut *conn).await?;
    if tables == 0 {
        return Ok(());
    }
    let legacy: Vec<(i64, String)> =
        sqlx::query_as(&format!("SELECT version, name FROM {LEGACY_TABLE} ORDER BY version"))
            .fetch_all(&mut *conn)
            .await?;
    conn.ensure_migrations_table().await.map_err(sqlx::Error::from)?;
    let known = dialect.migrations();
    for (version, name) in legacy {
        let migration = known
            .iter()
            .find(|m| m.version == version && m.description == name)
            .ok_or(sqlx::Error::from(MigrateError::VersionMissing(version)))?;
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES ($1, $2, TRUE, $3, 0) ON CONFLICT (version) DO NOTHING",
        )
        .bind(version)
        .bind(name)
        .bind(migration.checksum.to_vec())
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
