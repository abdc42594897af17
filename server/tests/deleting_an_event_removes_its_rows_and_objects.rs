//! The host deletes an event (`DELETE /v1/events/{slug}`): every row of it
//! (sessions, attempts, media, part digests, index entries, rendition jobs,
//! the event) and every object (originals, renditions, an unfinished
//! multipart upload's parts, an unconfirmed upload) goes; its host token,
//! guest code, wall and guest sessions stop working at once; another event
//! is untouched and its guests still upload.

use crate::support;

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::json;
use sqlx::{AnyConnection, Connection};
use support::multipart::{FILE, VIDEO, file, plan};
use support::{TestServer, problem};
use upload_once_core::wire::{AttemptResponse, Media};
use uuid::Uuid;

/// Rows of event `event_id` in each table, by the test's own connection.
async fn rows_of(server: &TestServer, event_id: i64, attempt_rows: &[i64]) -> Vec<(&'static str, i64)> {
    sqlx::any::install_default_drivers();
    let url = server.database_url.clone().unwrap();
    let mut conn = AnyConnection::connect(&url).await.unwrap();
    let mut out = Vec::new();
    for (table, sql) in [
        ("events", "SELECT COUNT(*) FROM events WHERE id = $1"),
        ("sessions", "SELECT COUNT(*) FROM sessions WHERE event_id = $1"),
        ("attempts", "SELECT COUNT(*) FROM attempts WHERE event_id = $1"),
        ("media", "SELECT COUNT(*) FROM media WHERE event_id = $1"),
        ("content_index", "SELECT COUNT(*) FROM content_index WHERE event_id = $1"),
        (
            "rendition_jobs",
            "SELECT COUNT(*) FROM rendition_jobs j WHERE j.media_id IN (SELECT id FROM media WHERE event_id = $1)",
        ),
    ] {
        let n: i64 = sqlx::query_scalar(sql).bind(event_id).fetch_one(&mut conn).await.unwrap();
        out.push((table, n));
    }
    let mut digests = 0;
    for row in attempt_rows {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM part_digests WHERE attempt_row_id = $1")
            .bind(*row)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        digests += n;
    }
    out.push(("part_digests", digests));
    conn.close().await.unwrap();
    out
}

async fn wait_for_renditions(server: &TestServer, media: &Media) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.http.get(media.url.as_deref().unwrap()).send().await.unwrap().status() != StatusCode::OK {
        assert!(Instant::now() < deadline, "no rendition for {}", media.url.as_deref().unwrap());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn keys_of(keys: &[String], slug: &str) -> Vec<String> {
    keys.iter().filter(|k| k.starts_with(&format!("{slug}/"))).cloned().collect()
}

#[tokio::test]
async fn deleting_an_event_removes_all_its_rows_and_objects_and_leaves_other_events_alone() {
    // Its event holds a duplicate, found by the SHA-256 the store verified and kept.
    if support::store_lacks(
        "deleting_an_event_removes_all_its_rows_and_objects_and_leaves_other_events_alone",
        support::StoreCheck::PutChecksum,
    ) {
        return;
    }
    let (server, _workers) = TestServer::start_rendering_with(support::multipart::options()).await;
    let event = server.scoped_event("event", 1 << 40, &["image/*", VIDEO]).await;
    let slug = event.event.slug.clone();
    let guest = server.guest_of(&event).await;
    let other = server.guest().await;

    // The doomed event: a photo (twice: the second a duplicate), an
    // unconfirmed upload, an unfinished multipart upload.
    let photo = support::media::encoded(
        image::RgbImage::from_pixel(32, 24, image::Rgb([10, 200, 10])),
        image::ImageFormat::Png,
    );
    let (_, media, _) = guest.upload_hashed(&photo).await;
    let (_, duplicate, sent) = guest.upload_hashed(&photo).await;
    assert!(!sent && duplicate.id == media.id, "the second is a duplicate");
    wait_for_renditions(&server, &media).await;
    let loose = Uuid::new_v4();
    let a = guest.authorize(loose, 4).await;
    assert_eq!(server.put(a.put().unwrap(), vec![1, 2, 3, 4]).await.status(), StatusCode::OK);
    let big = Uuid::new_v4();
    let bytes = file(FILE, 7);
    let answer: AttemptResponse = guest.authorize_video(big, FILE).await;
    guest.send_parts(big, &bytes, &plan(&answer), &[1]).await;
    let big_key = answer.object_key.clone();
    let upload_id = server.upload_id(&big_key).await.expect("a multipart upload");
    assert!(server.upload_is_open(&big_key, &upload_id).await);

    // Another event, with its own photo.
    let (_, kept) = other
        .upload(support::media::encoded(
            image::RgbImage::from_pixel(16, 16, image::Rgb([1, 2, 3])),
            image::ImageFormat::Png,
        ))
        .await;
    wait_for_renditions(&server, &kept).await;

    let event_id = server.state.records.event_by_slug(&slug).await.unwrap().unwrap().id;
    let attempt_rows: Vec<i64> =
        server.state.records.event_attempts(event_id).await.unwrap().iter().map(|a| a.row_id).collect();
    let before = rows_of(&server, event_id, &attempt_rows).await;
    assert!(before.iter().all(|(_, n)| *n > 0), "every kind of row to delete is there: {before:?}");
    let keys = server.stored_keys().await;
    assert!(keys_of(&keys, &slug).len() >= 4, "original, renditions, the loose upload: {keys:?}");
    let other_keys = keys_of(&keys, other.slug());

    // Only the host deletes: no token 401, a guest's or another host's 403.
    let path = format!("/v1/events/{slug}");
    let (status, _) = problem(server.call(Method::DELETE, &path, None, None).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    for token in [&guest.session, &other.event.host_token, &event.wall_token] {
        let (status, p) = problem(server.call(Method::DELETE, &path, Some(token), None).await).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")));
    }
    let r = server.call(Method::DELETE, &path, Some(&event.host_token), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);

    // Nothing of it is left, rows or objects.
    let after = rows_of(&server, event_id, &attempt_rows).await;
    assert!(after.iter().all(|(_, n)| *n == 0), "rows left: {after:?}");
    let keys = server.stored_keys().await;
    assert_eq!(keys_of(&keys, &slug), Vec::<String>::new(), "objects left");
    assert!(!server.upload_is_open(&big_key, &upload_id).await, "the multipart upload is aborted");
    assert!(!server.open_local_uploads().await.contains(&upload_id));

    // Its credentials no longer open anything.
    let (status, _) = problem(server.call(Method::DELETE, &path, Some(&event.host_token), None).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let r = server.call(Method::GET, &format!("/v1/events/{slug}/media"), Some(&event.host_token), None).await;
    assert_eq!(problem(r).await.0, StatusCode::NOT_FOUND);
    let r = server.call(Method::GET, &format!("/v1/events/{slug}/wall?code={}", event.guest_code), None, None).await;
    assert_eq!(problem(r).await.0, StatusCode::NOT_FOUND);
    let r = server
        .call(Method::POST, &format!("/v1/events/{slug}/sessions"), None, Some(json!({"guest_code": event.guest_code})))
        .await;
    assert_eq!(problem(r).await.0, StatusCode::NOT_FOUND);
    let (status, p) = problem(guest.get(loose).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_session")));
    assert_eq!(
        problem(server.http.get(media.url.as_deref().unwrap()).send().await.unwrap()).await.0,
        StatusCode::NOT_FOUND
    );

    // The other event is untouched, and its guests still upload.
    let keys = server.stored_keys().await;
    assert_eq!(keys_of(&keys, other.slug()), other_keys);
    assert_eq!(server.http.get(kept.url.as_deref().unwrap()).send().await.unwrap().status(), StatusCode::OK);
    other.upload(vec![0x89, b'P', b'N', b'G', 0, 1]).await;

    // The slug is free again.
    server.create_event(&slug, 1_000, &["image/*"], "none").await;
}

/// A PUT through a URL signed before the event was deleted: the embedded
/// store refuses it (the attempt is gone); a bucket cannot refuse a
/// presigned PUT by the attempt's state and takes it, and once every URL
/// signed for the event has expired the sweeper deletes that object too.
#[tokio::test]
async fn a_put_signed_before_the_deletion_leaves_nothing_behind() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let a = guest.authorize(Uuid::new_v4(), 4).await;
    let r = server.call(Method::DELETE, &format!("/v1/events/{slug}"), Some(&guest.event.host_token), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);

    let r = server.put(a.put().unwrap(), vec![1, 2, 3, 4]).await;
    if support::is_s3() {
        assert_eq!(r.status(), StatusCode::OK, "the bucket takes a PUT its URL allows");
        assert_eq!(keys_of(&server.stored_keys().await, &slug), vec![a.object_key.clone()]);
        // Not before the URL has expired: it could still be used again.
        server.sweep().await;
        assert_eq!(keys_of(&server.stored_keys().await, &slug), vec![a.object_key.clone()]);
    } else {
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("expired")));
    }
    server.clock.advance(server.state.lifetimes.url_ttl.as_millis() as i64 + 60_000);
    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!(report.late_objects_deleted, 1, "{report:?}");
    assert_eq!(keys_of(&server.stored_keys().await, &slug), Vec::<String>::new(), "objects left");
    // Done once: the next pass has nothing left to do.
    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!(report.late_objects_deleted, 0, "{report:?}");
}

/// A rendition worker that is writing while the event is deleted leaves
/// nothing behind: it finds its media gone after its writes and deletes
/// them.
#[tokio::test]
async fn a_rendition_made_during_the_deletion_leaves_nothing_behind() {
    let entered = std::sync::Arc::new(tokio::sync::Notify::new());
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let (e2, r2) = (entered.clone(), release.clone());
    let server = TestServer::start_with(support::Options {
        wrap_objects: Some(Box::new(move |inner| {
            let gate =
                support::GatedObjects { entered: e2, release: r2, gate: support::Gate::PutsEndingWith("-thumb") };
            std::sync::Arc::new(upload_once_server::storage::intercept::Intercepted::new(inner, gate))
        })),
        ..Default::default()
    })
    .await;
    let _workers = upload_once_server::services::renditions::spawn(&server.state);
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let photo = support::media::encoded(
        image::RgbImage::from_pixel(32, 24, image::Rgb([200, 10, 10])),
        image::ImageFormat::Png,
    );
    guest.upload(photo).await;
    // The worker has made the renditions and is about to write them.
    tokio::time::timeout(Duration::from_secs(30), entered.notified()).await.expect("a rendition being written");
    let mut finished = server.state.media.events.watch_finished();
    let r = server.call(Method::DELETE, &format!("/v1/events/{slug}"), Some(&guest.event.host_token), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(keys_of(&server.stored_keys().await, &slug), Vec::<String>::new(), "the deletion took what was there");

    release.add_permits(1);
    tokio::time::timeout(Duration::from_secs(30), finished.changed()).await.expect("the job ends").unwrap();
    assert_eq!(keys_of(&server.stored_keys().await, &slug), Vec::<String>::new(), "the late renditions are deleted");
}
