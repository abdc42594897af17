//! Attempt ids are unique across all sessions: an authorize with an id
//! another session has is refused (`422 id_reused`) and stores nothing —
//! never a second row — and the database itself enforces it. Databases made
//! before, which may hold one id in two sessions, keep both rows, each
//! readable and confirmable by its own session.

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::{AnyConnection, Connection};
use support::{Guest, Options, TestServer, fresh_database_url, is_postgres, now_ms, problem};
use upload_once_server::secrets::token_hash;
use uuid::Uuid;

fn png(id: Uuid, size: u64) -> serde_json::Value {
    json!({"id": id, "filename": "photo.png", "size": size, "content_type": "image/png"})
}

#[tokio::test]
async fn the_same_id_from_another_session_is_refused_and_stores_nothing() {
    let server = TestServer::start().await;
    let owner = server.guest().await;
    let same_event = server.guest_of(&owner.event).await;
    let other_event = server.guest().await;
    let id = Uuid::new_v4();
    let a = owner.authorize(id, 5).await;

    for (who, snoop) in [("a guest of the same event", &same_event), ("a guest of another event", &other_event)] {
        // The same parameters or others: refused either way.
        for body in [png(id, 5), json!({"id": id, "filename": "x.jpg", "size": 9, "content_type": "image/jpeg"})] {
            let (s, p) = problem(snoop.authorize_raw(body).await).await;
            assert_eq!((s, p["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("id_reused")), "{who}");
        }
        // And the id stays unknown to it everywhere else.
        assert_eq!(snoop.status(&[id]).await["results"][0]["state"], "not_found", "{who}");
    }
    assert_eq!(server.counts().await, (1, 0), "one row");
    // The owner's attempt is untouched, and its own repeat still works.
    let r = owner.authorize_raw(png(id, 5)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let again: serde_json::Value = r.json().await.unwrap();
    assert_eq!(again["object_key"], a.object_key);
    assert_eq!(server.put(a.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
    assert_eq!(owner.confirm(id, 5).await.status(), StatusCode::OK);
    assert_eq!(server.counts().await, (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_racing_for_one_id_make_one_row() {
    let server = TestServer::start().await;
    let first = server.guest().await;
    let second = server.guest().await;
    let mut guests: Vec<Guest<'_>> = Vec::new();
    for _ in 0..4 {
        guests.push(server.guest_of(&first.event).await);
        guests.push(server.guest_of(&second.event).await);
    }
    for _round in 0..5 {
        let id = Uuid::new_v4();
        let before = server.counts().await.0;
        let answers = futures_util::future::join_all(guests.iter().map(|g| g.authorize_raw(png(id, 5)))).await;
        let statuses: Vec<StatusCode> = answers.iter().map(|r| r.status()).collect();
        assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CREATED).count(), 1, "{statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == StatusCode::UNPROCESSABLE_ENTITY).count(), 7, "{statuses:?}");
        assert_eq!(server.counts().await.0, before + 1, "one row for the id");
    }
}

#[tokio::test]
async fn the_database_refuses_a_second_row_with_the_same_id() {
    let server = TestServer::start().await;
    let owner = server.guest().await;
    let id = Uuid::new_v4();
    owner.authorize(id, 5).await;
    let row = server.state.records.attempt_by_object_key(&owner.authorize(id, 5).await.object_key).await.unwrap();
    let row = row.unwrap();

    // Written past the server: the same id, another session's, another key.
    let mut conn = connect(server.database_url.as_deref().unwrap()).await;
    let other_session: i64 = sqlx::query_scalar(
        "INSERT INTO sessions (event_id, token_hash, created_at, expires_at) VALUES ($1, 'h', 0, 1) RETURNING id",
    )
    .bind(row.event_id)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let insert = sqlx::query(
        "INSERT INTO attempts (id, session_id, event_id, filename, size, content_type, object_key, state, created_at, expires_at)
         VALUES ($1, $2, $3, 'x.png', 5, 'image/png', 'elsewhere/0', 'authorized', 0, 1)",
    )
    .bind(id.to_string())
    .bind(other_session)
    .bind(row.event_id)
    .execute(&mut conn)
    .await;
    let error = insert.expect_err("a second row with the same id");
    assert!(matches!(&error, sqlx::Error::Database(db) if db.is_unique_violation()), "{error}");
    conn.close().await.unwrap();
    assert_eq!(server.counts().await, (1, 0));
}

/// A database made before ids were unique holds one id in two sessions:
/// the migration keeps both, each session reads and confirms its own, and
/// a third session is refused the id.
#[tokio::test]
async fn legacy_rows_sharing_an_id_stay_readable_by_their_own_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database_url(dir.path()).await;
    let shared = Uuid::new_v4();
    let tokens = ["legacy-token-a", "legacy-token-b"];
    make_legacy_database(&url, shared, &tokens).await;

    let server = TestServer::start_with(Options { database_url: Some(url), ..Default::default() }).await;
    let event: upload_once_core::wire::CreateEventResponse = serde_json::from_value(json!({
        "event": {"slug": "legacy", "title": "legacy", "max_file_bytes": 1000, "allowed_types": ["image/*"], "moderation": "none"},
        "guest_code": "legacycode", "host_token": "", "wall_token": ""
    }))
    .unwrap();
    let owners: Vec<Guest<'_>> =
        tokens.iter().map(|t| Guest { server: &server, event: event.clone(), session: t.to_string() }).collect();

    let mut keys = Vec::new();
    for (n, owner) in owners.iter().enumerate() {
        // Each session's own row: its status, and a repeat of its authorize.
        assert_eq!(owner.status(&[shared]).await["results"][0]["state"], "authorized", "session {n}");
        let r = owner.authorize_raw(png(shared, 5)).await;
        assert_eq!(r.status(), StatusCode::OK, "session {n}: its own attempt, returned");
        let a: upload_once_core::wire::AttemptResponse = r.json().await.unwrap();
        assert_eq!(a.object_key, format!("legacy/{n:032x}"), "session {n}: its own row");
        keys.push(a);
    }
    // A new session of the event is refused the id.
    let third = server.guest_of(&event).await;
    let (s, p) = problem(third.authorize_raw(png(shared, 5)).await).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("id_reused")));
    assert_eq!(server.counts().await, (2, 0));

    // Both legacy attempts go all the way, once each.
    for (owner, a) in owners.iter().zip(&keys) {
        assert_eq!(server.put(a.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
        assert_eq!(owner.confirm(shared, 5).await.status(), StatusCode::OK);
    }
    assert_eq!(server.counts().await, (2, 2));
}

async fn connect(url: &str) -> AnyConnection {
    sqlx::any::install_default_drivers();
    let url = if url.starts_with("sqlite:") { format!("{url}?mode=rwc") } else { url.to_owned() };
    AnyConnection::connect(&url).await.unwrap()
}

/// The schema of migrations 1–3 (applied by sqlx, as a server of that era
/// did), with one event, two sessions with these tokens, and one attempt id
/// in both sessions.
async fn make_legacy_database(url: &str, shared: Uuid, tokens: &[&str]) {
    let dialect = if is_postgres() { "postgres" } else { "sqlite" };
    let era = tempfile::tempdir().unwrap();
    for file in ["0001_init.sql", "0002_readiness.sql", "0003_multipart.sql"] {
        let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(dialect).join(file);
        std::fs::copy(from, era.path().join(file)).unwrap();
    }
    let mut conn = connect(url).await;
    sqlx::migrate::Migrator::new(era.path()).await.unwrap().run(&mut conn).await.unwrap();
    let now = now_ms();
    let event: i64 = sqlx::query_scalar(
        "INSERT INTO events (slug, title, max_file_bytes, allowed_types, moderation, guest_code, host_token_hash, wall_token_hash, created_at)
         VALUES ('legacy', 'legacy', 1000, '[\"image/*\"]', 'none', 'legacycode', 'host-hash', 'wall-hash', $1) RETURNING id",
    )
    .bind(now)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    for (n, token) in tokens.iter().enumerate() {
        let session: i64 = sqlx::query_scalar(
            "INSERT INTO sessions (event_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(event)
        .bind(token_hash(token))
        .bind(now)
        .bind(now + 86_400_000)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO attempts (id, session_id, event_id, filename, size, content_type, object_key, state, created_at, expires_at)
             VALUES ($1, $2, $3, 'photo.png', 5, 'image/png', $4, 'authorized', $5, $6)",
        )
        .bind(shared.to_string())
        .bind(session)
        .bind(event)
        .bind(format!("legacy/{n:032x}"))
        .bind(now)
        .bind(now + 86_400_000)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();
}
