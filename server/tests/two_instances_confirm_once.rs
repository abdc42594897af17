//! Two server instances on different ports over one PostgreSQL database and
//! one bucket — the production shape behind a load balancer: 200 concurrent
//! confirms of 20 attempts, spread over both instances, make exactly 20 media
//! records, and every confirm of an attempt answers with the same record.
//! With a shared `--signing-key` and `--public-url`, both instances produce
//! the same media URLs, and each serves the other's.
//!
//! Needs the production backends (`cargo xtask test server` provides them
//! in its postgres+s3 run, where it must not skip). Without them it says so
//! and passes, except where `support::backends_required()` says a missing
//! backend is a failure (CI outside the xtask).

use crate::support;

use std::collections::{BTreeMap, BTreeSet};

use reqwest::StatusCode;
use serde_json::Value;
use support::{Guest, Options, TestServer, is_postgres, is_s3};
use uuid::Uuid;

const ATTEMPTS: usize = 20;
const CONFIRMS: usize = 200;
const PUBLIC_URL: &str = "http://upload-once.lb.test";

fn backends_present() -> bool {
    let present = is_postgres() && is_s3();
    let required = support::backends_required();
    if !present {
        assert!(
            !required,
            "two_instances_confirm_once needs PostgreSQL and S3 (run it through `cargo xtask test server`)"
        );
        println!(
            "two_instances_confirm_once: skipped, needs PostgreSQL + S3 (UPLOAD_ONCE_TEST_PG_ADMIN_URL, UPLOAD_ONCE_TEST_STORAGE=s3)"
        );
    }
    present
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_confirm_each_attempt_exactly_once_and_share_media_urls() {
    if !backends_present() {
        return;
    }
    let key = hex::encode([7u8; 32]);
    let a = TestServer::start_with(Options {
        signing_key: Some(key.clone()),
        public_url: Some(PUBLIC_URL.into()),
        ..Default::default()
    })
    .await;
    let b = TestServer::start_with(Options {
        signing_key: Some(key),
        public_url: Some(PUBLIC_URL.into()),
        database_url: a.database_url.clone(),
        bucket: a.bucket.clone(),
        ..Default::default()
    })
    .await;
    assert_ne!(a.base, b.base, "two instances");
    let instances = [&a, &b];
    // Both instances make renditions, as deployed: the wall shows a media
    // once its renditions are settled.
    let _workers = (
        upload_once_server::services::renditions::spawn(&a.state),
        upload_once_server::services::renditions::spawn(&b.state),
    );

    // One event and one guest; the session made on A works on B.
    let guest_a = a.guest().await;
    let guest_b = Guest { server: &b, event: guest_a.event.clone(), session: guest_a.session.clone() };
    let guests = [&guest_a, &guest_b];

    // 20 attempts, authorized and uploaded through alternating instances.
    let mut ids = Vec::new();
    for i in 0..ATTEMPTS {
        let guest = guests[i % 2];
        let id = Uuid::new_v4();
        let bytes = format!("photo number {i:02}").into_bytes();
        let attempt = guest.authorize(id, bytes.len() as u64).await;
        assert_eq!(guest.server.put(attempt.put().unwrap(), bytes.clone()).await.status(), StatusCode::OK);
        ids.push((id, bytes));
    }

    // 200 confirms at once: each attempt 10 times, half on each instance.
    let confirms = (0..CONFIRMS).map(|i| {
        let (id, bytes) = &ids[i % ATTEMPTS];
        let guest = guests[(i / ATTEMPTS) % 2];
        async move {
            let r = guest.confirm(*id, bytes.len() as u64).await;
            let status = r.status();
            let body: Value = r.json().await.unwrap_or(Value::Null);
            (*id, (i / ATTEMPTS) % 2, status, body)
        }
    });
    let results = futures_util::future::join_all(confirms).await;

    let mut media_of: BTreeMap<Uuid, BTreeSet<String>> = BTreeMap::new();
    let mut urls_of: BTreeMap<Uuid, BTreeSet<String>> = BTreeMap::new();
    for (id, instance, status, body) in &results {
        assert_eq!(*status, StatusCode::OK, "confirm of {id} on instance {instance}: {body}");
        media_of.entry(*id).or_default().insert(body["id"].as_str().unwrap().to_owned());
        urls_of.entry(*id).or_default().insert(body["url"].as_str().unwrap().to_owned());
    }
    assert_eq!(media_of.len(), ATTEMPTS);
    for (id, media) in &media_of {
        assert_eq!(media.len(), 1, "every confirm of {id}, on either instance, returns the same media id: {media:?}");
    }
    for (id, urls) in &urls_of {
        assert_eq!(urls.len(), 1, "both instances make the same media URL for {id}: {urls:?}");
    }
    assert_eq!(a.counts().await, (ATTEMPTS as u64, ATTEMPTS as u64), "exactly 20 media rows");
    assert_eq!(b.counts().await, (ATTEMPTS as u64, ATTEMPTS as u64), "the same database");
    assert_eq!(a.stored_keys().await.len(), ATTEMPTS, "one object per attempt");

    // A media URL made by one instance works on the other (shared signing
    // key); the load balancer's address is swapped for each instance's. The
    // host's original is read (the display URL waits for its rendition).
    let listed = support::media::host_list(&guest_a).await;
    for (id, bytes) in &ids {
        let url = urls_of[id].iter().next().unwrap();
        assert!(url.starts_with(PUBLIC_URL), "{url}");
        let media_id = &media_of[id].iter().next().unwrap();
        let listed = listed.iter().find(|m| m["id"].as_str() == Some(media_id.as_str())).unwrap();
        let url = listed["original_url"].as_str().unwrap();
        assert!(url.starts_with(PUBLIC_URL), "{url}");
        for server in instances {
            let r = server.http.get(url.replacen(PUBLIC_URL, &server.base, 1)).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK, "{id} via {}", server.base);
            assert_eq!(r.bytes().await.unwrap().as_ref(), bytes.as_slice());
        }
    }

    // Both instances agree on every attempt's status.
    let all: Vec<Uuid> = ids.iter().map(|(id, _)| *id).collect();
    let (sa, sb) = (guest_a.status(&all).await, guest_b.status(&all).await);
    assert_eq!(sa, sb);
    assert!(sa["results"].as_array().unwrap().iter().all(|r| r["state"] == "confirmed"), "{sa}");

    // The moderation of one instance is seen by the other, and the wall
    // positions stay in approval order across both.
    let host = guest_a.event.host_token.clone();
    let mut approved = Vec::new();
    for (i, media) in media_of.values().enumerate().take(6) {
        let media_id = media.iter().next().unwrap().clone();
        // Its renditions settled, an approval places it at once.
        support::media::settled(&a, media_id.parse().unwrap()).await;
        let server = instances[i % 2];
        let r = server.moderate(&host, &media_id, "approve", None).await;
        assert_eq!(r.status(), StatusCode::OK);
        approved.push(media_id);
    }
    for server in instances {
        let path = format!("/v1/events/{}/wall?code={}", guest_a.slug(), guest_a.event.guest_code);
        let wall: Value = server.call(reqwest::Method::GET, &path, None, None).await.json().await.unwrap();
        let order: Vec<String> =
            wall["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect();
        assert_eq!(order, approved, "the wall in approval order, on {}", server.base);
    }
}
