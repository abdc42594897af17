//! Schema migrations, embedded in the binary. Each dialect has its own
//! files under `server/migrations/<dialect>/`; versions line up across
//! dialects.

/// One migration.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Monotonic version number.
    pub version: i64,
    /// Short name.
    pub name: &'static str,
    /// The SQL script.
    pub sql: &'static str,
}

/// SQLite migrations, in order.
pub const SQLITE: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../../migrations/sqlite/0001_init.sql") },
    Migration { version: 2, name: "readiness", sql: include_str!("../../migrations/sqlite/0002_readiness.sql") },
];

/// PostgreSQL migrations, in order (same versions as [`SQLITE`]).
pub const POSTGRES: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../../migrations/postgres/0001_init.sql") },
    Migration { version: 2, name: "readiness", sql: include_str!("../../migrations/postgres/0002_readiness.sql") },
];
