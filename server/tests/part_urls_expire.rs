//! A part URL stops working when it expires, and a fresh `POST /parts`
//! gives one that works: the part is sent again, and stored once.
//!
//! The embedded store also refuses a part whose URL expired while its bytes
//! were arriving (`403 url_expired` when the last byte comes), so no part
//! lands on a URL past its expiry. S3 checks a presigned URL when the
//! request starts, against its own clock: a part that started in time is
//! stored, one that starts late is refused (`403 AccessDenied`).

use crate::support;

use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use support::multipart::part;
use support::{Guest, Options, TestServer, is_s3, problem, until};
use upload_once_core::wire::{MultipartPlan, SignedPart};
use uuid::Uuid;

/// A multipart server whose attempts last an hour and whose URLs last 2 s
/// on S3 (the bucket checks them on its own real clock: the test waits)
/// or 10 minutes with the embedded store (the test moves the clock).
fn server_options() -> Options {
    let url_ttl = if is_s3() { Duration::from_secs(2) } else { Duration::from_secs(600) };
    Options { url_ttl: Some(url_ttl), attempt_ttl: Some(Duration::from_secs(3600)), ..support::multipart::options() }
}

/// Waits until the store's own (real) clock is past a presigned URL's
/// expiry, read from the URL itself.
async fn until_presigned_url_expired(url: &str) {
    let url = reqwest::Url::parse(url).unwrap();
    let param = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned()).unwrap();
    let date = param("X-Amz-Date");
    let signed_at: jiff::Timestamp =
        format!("{}-{}-{}T{}:{}:{}Z", &date[..4], &date[4..6], &date[6..8], &date[9..11], &date[11..13], &date[13..15])
            .parse()
            .unwrap();
    let expires: i64 = param("X-Amz-Expires").parse().unwrap();
    let deadline = signed_at.as_millisecond() + expires * 1000;
    let wait = deadline - jiff::Timestamp::now().as_millisecond() + 100;
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
    }
}

/// Moves the server's clock to the start of its next whole second and signs
/// part `number` there, so its URL lives its whole TTL (URL expiries are
/// whole seconds).
async fn sign_at_a_whole_second(
    guest: &Guest<'_>,
    id: Uuid,
    bytes: &[u8],
    plan: &MultipartPlan,
    number: u32,
) -> SignedPart {
    let clock = &guest.server.clock;
    let now = upload_once_server::clock::Clock::now(clock.as_ref());
    clock.set((now / 1000 + 1) * 1000);
    guest.sign(id, bytes, plan, &[number]).await.remove(0)
}

#[tokio::test]
async fn an_expired_part_url_is_refused_and_a_fresh_one_works() {
    if support::store_lacks("an_expired_part_url_is_refused_and_a_fresh_one_works", support::StoreCheck::UrlExpiry) {
        return;
    }
    let server = TestServer::start_with(server_options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(40).await;
    let stale = sign_at_a_whole_second(&guest, id, &bytes, &plan, 1).await;
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();

    if is_s3() {
        until_presigned_url_expired(&stale.upload.url).await;
        let refused =
            support::multipart::refused_by_s3(&server, &stale.upload.url, &stale.upload, part(&bytes, &plan, 1)).await;
        if let Some((status, code)) = refused {
            assert_eq!((status, code.as_str()), (StatusCode::FORBIDDEN, "AccessDenied"));
        }
    } else {
        server.clock.advance(600_000);
        let (status, body) = problem(server.put(&stale.upload, part(&bytes, &plan, 1)).await).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::FORBIDDEN, Some("url_expired")));
    }
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, Vec::<u32>::new(), "not stored");

    let fresh = sign_at_a_whole_second(&guest, id, &bytes, &plan, 1).await;
    assert_eq!(support::multipart::upload_of(&fresh.upload.url), upload_id, "the same upload");
    assert_eq!(server.put(&fresh.upload, part(&bytes, &plan, 1)).await.status(), StatusCode::OK);
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, vec![1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_part_url_that_expires_while_its_bytes_arrive() {
    let server = TestServer::start_with(server_options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(41).await;
    let signed = sign_at_a_whole_second(&guest, id, &bytes, &plan, 2).await;
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();

    let body = part(&bytes, &plan, 2);
    let (tx, put) = support::multipart::held_back_put(&server, &signed.upload, &body, 1 << 20).await;
    if is_s3() {
        // The store checked the URL when the request started; now it
        // expires on the store's clock, with the part half sent.
        until_presigned_url_expired(&signed.upload.url).await;
    } else {
        until("the part's bytes to arrive", Duration::from_secs(30), || !server.temp_files().is_empty()).await;
        server.clock.advance(600_000);
    }
    tx.send(Ok(Bytes::copy_from_slice(&body[1 << 20..]))).await.unwrap();
    drop(tx);
    let r = put.await.unwrap().expect("an answer");
    if is_s3() {
        assert_eq!(r.status(), StatusCode::OK, "S3 stores a part that started in time");
        assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, vec![2]);
        return;
    }
    let (status, problem) = problem(r).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::FORBIDDEN, Some("url_expired")), "{problem}");
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, Vec::<u32>::new(), "not stored");
    assert_eq!(server.temp_files(), Vec::<String>::new(), "its bytes are not kept");

    let fresh = guest.sign(id, &bytes, &plan, &[2]).await.remove(0);
    assert_eq!(server.put(&fresh.upload, body).await.status(), StatusCode::OK);
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, vec![2]);
}
