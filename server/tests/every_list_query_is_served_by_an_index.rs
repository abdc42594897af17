//! At a festival's size (issue 48) every query of the host's list, its
//! counts, what changed, the bulk decisions, the wall and the quotas an
//! authorize reads is answered from an index, on SQLite and on PostgreSQL: the plans are read here (and
//! printed, for docs/benchmarks.md, "A festival's size").
//!
//! PostgreSQL chooses a sequential scan for a table as small as a test's,
//! so its plans are read with `enable_seqscan` off: the question is whether
//! an index can serve the query, not what the planner prefers for ten rows.

use crate::support;

use sqlx::{AnyConnection, Row};
use support::fresh_database_url;
use upload_once_server::store::MediaFilter;
use upload_once_server::store::dialect::Dialect;
use upload_once_server::store::quota::USAGE_SQL;
use upload_once_server::store::sql::{
    BULK_BATCH_SQL, BULK_WAITING_COUNT_SQL, MEDIA_CHANGES_SQL, MEDIA_COUNTS_SQL, SqlStore, WALL_BEFORE_LAST_SQL,
    media_page_sql, wall_sql,
};

/// A query, its arguments (all integers or text), and the indexes that may
/// serve it (one of them must).
struct Case {
    name: String,
    sql: String,
    args: Vec<Arg>,
    index: &'static [&'static str],
}

enum Arg {
    Int(i64),
    Text(&'static str),
}

/// The plan of `case`, one line per step.
async fn plan(conn: &mut AnyConnection, dialect: Dialect, case: &Case) -> Vec<String> {
    let explain = match dialect {
        Dialect::Sqlite => format!("EXPLAIN QUERY PLAN {}", case.sql),
        Dialect::Postgres => format!("EXPLAIN {}", case.sql),
    };
    let mut query = sqlx::query(&explain);
    for arg in &case.args {
        query = match arg {
            Arg::Int(n) => query.bind(*n),
            Arg::Text(t) => query.bind(*t),
        };
    }
    let rows = query.fetch_all(&mut *conn).await.unwrap_or_else(|e| panic!("{}: {e}", case.name));
    rows.iter()
        .map(|row| match dialect {
            // (id, parent, notused, detail)
            Dialect::Sqlite => row.try_get::<String, _>(3).unwrap(),
            Dialect::Postgres => row.try_get::<String, _>(0).unwrap(),
        })
        .collect()
}

/// A bulk decision's media: the waiting ones, read by state.
const WAITING: &[&str] = &["media_listed_by_state"];

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for filter in [MediaFilter::All, MediaFilter::Pending, MediaFilter::Approved, MediaFilter::Rejected] {
        for newest_first in [false, true] {
            for after in [false, true] {
                let mut args = vec![Arg::Int(1)];
                if filter != MediaFilter::All {
                    args.push(Arg::Text(filter.as_str()));
                }
                if after {
                    args.extend([Arg::Int(1_000), Arg::Text("00000000-0000-0000-0000-000000000000")]);
                }
                args.push(Arg::Int(101));
                cases.push(Case {
                    name: format!(
                        "a page of {} (newest first: {newest_first}, after a place: {after})",
                        filter.as_str()
                    ),
                    sql: media_page_sql(filter, newest_first, after),
                    args,
                    index: if filter == MediaFilter::All { &["media_listed"] } else { &["media_listed_by_state"] },
                });
            }
        }
    }
    let int = |values: &[i64]| values.iter().map(|n| Arg::Int(*n)).collect::<Vec<_>>();
    cases.extend([
        Case {
            name: "what changed".into(),
            sql: MEDIA_CHANGES_SQL.into(),
            args: int(&[1, 5, 500]),
            index: &["media_changes"],
        },
        Case {
            name: "the counts".into(),
            sql: MEDIA_COUNTS_SQL.into(),
            args: int(&[1]),
            index: &["media_listed_by_state"],
        },
        Case {
            name: "a bulk decision's total".into(),
            sql: BULK_WAITING_COUNT_SQL.into(),
            args: int(&[1, 5]),
            index: WAITING,
        },
        Case {
            name: "a bulk decision's batch".into(),
            sql: BULK_BATCH_SQL.into(),
            args: int(&[1, 5, 200]),
            index: WAITING,
        },
        Case { name: "a wall page".into(), sql: wall_sql(), args: int(&[1, 0, 100]), index: &["media_wall"] },
        Case {
            name: "the wall's newest".into(),
            sql: WALL_BEFORE_LAST_SQL.into(),
            args: int(&[1, 100]),
            index: &["media_wall"],
        },
        Case {
            name: "a session's and its event's quotas".into(),
            sql: USAGE_SQL.into(),
            args: int(&[1, 1, 0]),
            index: &["attempts_session"],
        },
    ]);
    cases
}

#[tokio::test]
async fn every_list_query_uses_its_index_and_reads_no_table_whole() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let store = SqlStore::open(&url).await.unwrap();
    let dialect = store.dialect();
    let mut conn = store.pool().acquire().await.unwrap();
    if dialect == Dialect::Postgres {
        sqlx::query("SET enable_seqscan = off").execute(&mut *conn).await.unwrap();
    }
    // The schema's tables: a SCAN of one reads it whole (a SCAN of a
    // subquery's row, or of a name in a FROM list of subqueries, does not).
    let tables: Vec<String> = if dialect == Dialect::Sqlite {
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'").fetch_all(&mut *conn).await.unwrap()
    } else {
        Vec::new()
    };
    let mut report = String::new();
    for case in cases() {
        let steps = plan(&mut conn, dialect, &case).await;
        report.push_str(&format!("{}:\n    {}\n", case.name, steps.join("\n    ")));
        let text = steps.join("\n");
        assert!(
            case.index.iter().any(|i| text.contains(i)),
            "{}: none of {:?} is used:\n{text}",
            case.name,
            case.index
        );
        let whole_table = match dialect {
            // A SCAN of a table (not of a subquery's few rows) reads it whole.
            Dialect::Sqlite => steps.iter().any(|s| {
                let scanned = s.strip_prefix("SCAN ").and_then(|rest| rest.split_whitespace().next());
                scanned.is_some_and(|name| tables.iter().any(|t| t == name))
            }),
            Dialect::Postgres => text.contains("Seq Scan"),
        };
        assert!(!whole_table, "{}: a table is read whole:\n{text}", case.name);
        if dialect == Dialect::Sqlite && case.name.contains("quotas") {
            assert!(!text.contains("attempts_expiry"), "the quotas read every event's live attempts:\n{text}");
        }
        if dialect == Dialect::Sqlite && case.name == "the counts" {
            assert!(text.contains("COVERING INDEX"), "the counts read rows, not only the index:\n{text}");
        }
        if dialect == Dialect::Sqlite && !case.name.contains("count") && !case.name.contains("newest'") {
            assert!(!text.contains("TEMP B-TREE"), "{}: sorted after reading, not read in order:\n{text}", case.name);
        }
    }
    println!("query plans ({dialect:?}):\n{report}");
}
