//! Records are not kept for ever (issue 15's housekeeping): the record of an
//! attempt that ended without a media (expired, or rejected) is deleted once
//! `--record-retention` (default 30 days) has passed since its expiry, with
//! its part digests; a lapsed guest session with no attempt left goes the
//! same retention after it lapsed. An attempt that made a media stays, and
//! so does its session. Until its record goes, a status still answers
//! `expired`; after, `not_found`. Time is the server's manual clock.

use crate::support;

use reqwest::StatusCode;
use sqlx::{AnyConnection, Connection};
use support::TestServer;
use uuid::Uuid;

const DAY_MS: i64 = 86_400_000;

/// (attempts with this id, sessions of this event), by the test's own connection.
async fn rows(server: &TestServer, attempt: Uuid, event_slug: &str) -> (i64, i64) {
    sqlx::any::install_default_drivers();
    let mut conn = AnyConnection::connect(server.database_url.as_deref().unwrap()).await.unwrap();
    let attempts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM attempts WHERE id = $1")
        .bind(attempt.to_string())
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let sessions: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE event_id = (SELECT id FROM events WHERE slug = $1)")
            .bind(event_slug)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    conn.close().await.unwrap();
    (attempts, sessions)
}

#[tokio::test]
async fn an_ended_attempt_and_then_its_lapsed_session_are_deleted_and_a_confirmed_one_stays() {
    let server = TestServer::start().await;
    // One guest confirms a photo; another only authorizes one, which expires.
    let keeper = server.guest().await;
    let (kept, _) = keeper.upload(b"a photo kept".to_vec()).await;
    let quitter = server.guest().await;
    let ended = Uuid::new_v4();
    quitter.authorize(ended, 8).await;
    assert_eq!(rows(&server, ended, quitter.slug()).await, (1, 1));

    // The attempt expires (7 days) and is swept: its record stays a while.
    server.clock.advance(7 * DAY_MS + 60_000);
    server.sweep().await;
    assert_eq!(quitter.status(&[ended]).await["results"][0]["state"], "expired");
    server.clock.advance(29 * DAY_MS);
    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!(report.attempts_forgotten, 0, "a day short of the retention");
    assert_eq!(quitter.status(&[ended]).await["results"][0]["state"], "expired", "the lapsed session still asks");

    // 30 days after its expiry the record goes; the session, lapsed only
    // 7 days ago, stays for now (with nothing left to ask about).
    server.clock.advance(DAY_MS);
    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!(report.attempts_forgotten, 1);
    assert_eq!(rows(&server, ended, quitter.slug()).await, (0, 1));
    assert_eq!(quitter.status(&[ended]).await["results"][0]["state"], "not_found");

    // 30 days after the session lapsed (day 60), it goes too.
    server.clock.advance(23 * DAY_MS);
    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!(report.sessions_forgotten, 1, "the quitter's session; the keeper's has an attempt");
    assert_eq!(rows(&server, ended, quitter.slug()).await, (0, 0));
    assert_eq!(quitter.get(ended).await.status(), StatusCode::UNAUTHORIZED, "its token is unknown now");

    // The confirmed attempt, its media and its (lapsed) session stay.
    assert_eq!(keeper.status(&[kept]).await["results"][0]["state"], "confirmed");
    assert_eq!(server.counts().await.1, 1, "the media stays");
}

#[tokio::test]
async fn the_record_retention_is_configurable_and_must_be_positive() {
    use clap::Parser;
    use upload_once_server::config::Config;
    assert_eq!(Config::defaults().record_retention, std::time::Duration::from_secs(30 * 86_400));
    let set = Config::try_parse_from(["upload-once-server", "--record-retention", "90d"]).unwrap();
    assert_eq!(set.record_retention, std::time::Duration::from_secs(90 * 86_400));
    let zero = Config::try_parse_from(["upload-once-server", "--record-retention", "0"]).unwrap();
    assert!(zero.validate().is_err(), "a zero retention is refused");
}
