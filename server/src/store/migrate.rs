//! Schema migrations: `sqlx::migrate!` embeds `server/migrations/<dialect>/`
//! with a checksum per file, and records what it applied in
//! `_sqlx_migrations`. A database whose applied migration no longer matches
//! its file (or that has one this server does not know) is refused at
//! start rather than run half-understood.

use sqlx::AnyPool;

use super::dialect::Dialect;
use crate::error::Result;

/// Brings the schema up to date: one transaction that holds the dialect's
/// migration lock (so instances starting together migrate once), in which
/// sqlx checks every applied migration's checksum and applies the missing
/// ones.
pub async fn migrate(pool: &AnyPool, dialect: Dialect) -> Result<()> {
    let mut tx = pool.begin_with(dialect.begin_write()).await?;
    dialect.lock_migrations(&mut tx).await?;
    dialect.migrations().run(&mut *tx).await.map_err(sqlx::Error::from)?;
    tx.commit().await?;
    Ok(())
}
