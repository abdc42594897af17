//! The composite checksum of a file stored in parts comes from digests
//! that are known: the store's own listing, or — for a store that cannot
//! list them — the one SHA-256 every URL of a part was signed with (the
//! store refused other bytes). A part signed without a digest, or with two
//! different ones, leaves the composite out rather than guessed.
//!
//! Also: S3's `ListParts` is read page by page.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use reqwest::StatusCode;
use serde_json::json;
use support::multipart::{FILE, MultipartFaults, composite, file, part, plan};
use support::{TestServer, is_s3};
use upload_once_core::wire::Media;
use upload_once_server::secrets::sha256_hex;
use uuid::Uuid;

async fn server_hiding_digests() -> (TestServer, Arc<MultipartFaults>) {
    let (server, faults) = MultipartFaults::start().await;
    faults.hide_digests.store(true, Ordering::SeqCst);
    (server, faults)
}

#[tokio::test]
async fn without_the_stores_digests_the_signed_ones_make_the_composite() {
    let (server, faults) = server_hiding_digests().await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(50).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    let listed = server.state.objects.list_parts(&authorized.object_key, &upload_id).await.unwrap().unwrap();
    assert!(listed.iter().all(|p| p.sha256.is_none()), "the store lists no digest");

    let status = guest.status_of(id).await;
    assert_eq!(
        status["parts"][0]["sha256"].as_str(),
        Some(sha256_hex(&part(&bytes, &plan, 1)).as_str()),
        "status shows the signed digest"
    );

    let media: Media = guest.confirm_video(id, FILE).await.json().await.unwrap();
    assert_eq!(media.composite_sha256.as_deref(), Some(composite(&bytes, &plan).as_str()));
    assert!(faults.hide_digests.load(Ordering::SeqCst));
}

/// A part signed without its digest, or with two, leaves the composite
/// unknown: then whether the parts are all of one file cannot be checked,
/// so the file is not confirmed at all, whatever composite is claimed
/// (`400 malformed_request`, nothing assembled): a client whose hashing
/// failed halfway (or a spliced upload hiding behind a missing digest)
/// cannot confirm a splice.
#[tokio::test]
async fn a_part_signed_without_its_digest_or_with_two_is_not_confirmed() {
    let (server, _faults) = server_hiding_digests().await;
    let guest = server.big_guest().await;
    let bytes = file(FILE, 51);
    let refused = |r: reqwest::Response| async move {
        let (status, p) = support::problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::BAD_REQUEST, Some("malformed_request")), "{p}");
    };

    // Part 2 signed without a digest (a browser whose hashing failed).
    let id = Uuid::new_v4();
    let plan = plan(&guest.authorize_video(id, FILE).await);
    guest.send_parts(id, &bytes, &plan, &[1, 3]).await;
    let r = guest.sign_raw(id, json!({"parts": [{"number": 2}]})).await;
    let signed: upload_once_core::wire::PartsResponse = r.json().await.unwrap();
    assert_eq!(server.put(&signed.parts[0].upload, part(&bytes, &plan, 2)).await.status(), StatusCode::OK);
    refused(guest.confirm_video(id, FILE).await).await;
    refused(guest.confirm_video_without_composite(id, FILE).await).await;
    assert_eq!(guest.status_of(id).await["state"], "authorized", "nothing assembled or recorded");

    // Part 1 signed with two digests (the second URL never used): which
    // bytes landed is not known from the signatures alone.
    let id = Uuid::new_v4();
    let plan = plan_of(&guest, id).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    let other = sha256_hex(b"other bytes");
    assert_eq!(guest.sign_raw(id, json!({"parts": [{"number": 1, "sha256": other}]})).await.status(), StatusCode::OK);
    let status = guest.status_of(id).await;
    assert_eq!(status["parts"][0].get("sha256"), None, "no digest shown for part 1");
    refused(guest.confirm_video(id, FILE).await).await;
    assert_eq!(server.counts().await.1, 0, "no media record");
}

/// A client that hashed nothing (no part signed with a digest) stored
/// nothing to compare: its file confirms, without a composite.
#[tokio::test]
async fn parts_sent_without_any_digest_confirm_without_a_composite() {
    let (server, _faults) = server_hiding_digests().await;
    let guest = server.big_guest().await;
    let bytes = file(FILE, 53);
    let id = Uuid::new_v4();
    let plan = plan(&guest.authorize_video(id, FILE).await);
    let numbers: Vec<serde_json::Value> = (1..=plan.part_count).map(|n| json!({"number": n})).collect();
    let signed: upload_once_core::wire::PartsResponse =
        guest.sign_raw(id, json!({"parts": numbers})).await.json().await.unwrap();
    for p in &signed.parts {
        assert_eq!(server.put(&p.upload, part(&bytes, &plan, p.number)).await.status(), StatusCode::OK);
    }
    let media: Media = guest.confirm_video_without_composite(id, FILE).await.json().await.unwrap();
    assert_eq!(media.composite_sha256, None);
}

async fn plan_of(guest: &support::Guest<'_>, id: Uuid) -> upload_once_core::wire::MultipartPlan {
    plan(&guest.authorize_video(id, FILE).await)
}

/// The store's own digests win over the signed ones: with them listed, the
/// second digest signed for part 1 changes nothing.
#[tokio::test]
async fn the_stores_own_digests_win() {
    if support::store_lacks("the_stores_own_digests_win", support::StoreCheck::PartChecksums) {
        return;
    }
    let server = TestServer::start_with(support::multipart::options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, _, plan) = guest.authorize_file(52).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    let other = sha256_hex(b"other bytes");
    assert_eq!(guest.sign_raw(id, json!({"parts": [{"number": 1, "sha256": other}]})).await.status(), StatusCode::OK);
    let media: Media = guest.confirm_video(id, FILE).await.json().await.unwrap();
    assert_eq!(media.composite_sha256.as_deref(), Some(composite(&bytes, &plan).as_str()));
}

/// `ListParts` answers at most a page of parts (1000 on S3); the S3 store
/// reads every page. Here a store that asks for pages of 2.
#[tokio::test]
async fn s3_lists_parts_page_by_page() {
    if !is_s3() {
        // The embedded store lists its directory in one go.
        return;
    }
    let server = TestServer::start_with(support::multipart::options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(53).await;
    guest.send_parts(id, &bytes, &plan, &[3, 1, 2]).await;
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();

    let (access_key, secret_key, _) = upload_once_server::storage::s3::S3Settings::credentials_from_env().unwrap();
    let settings = upload_once_server::storage::s3::S3Settings {
        endpoint: support::s3_endpoint(),
        bucket: server.bucket.clone().unwrap(),
        region: "us-east-1".into(),
        path_style: true,
        conditional_put: true,
        access_key,
        secret_key,
        session_token: None,
    };
    let small_pages =
        upload_once_server::storage::s3::S3ObjectStore::new(&settings, server.state.lifetimes.clock.clone())
            .unwrap()
            .with_list_parts_page(2);
    use upload_once_server::storage::ObjectStore;
    // The store does answer in pages: the first of 2 parts is truncated.
    let credentials = support::s3_credentials();
    let mut first_page =
        rusty_s3::actions::ListParts::new(small_pages.bucket(), Some(&credentials), &authorized.object_key, &upload_id);
    first_page.set_max_parts(2);
    let url = rusty_s3::S3Action::sign(&first_page, std::time::Duration::from_secs(60));
    let page =
        rusty_s3::actions::ListParts::parse_response(&server.http.get(url).send().await.unwrap().text().await.unwrap())
            .unwrap();
    assert_eq!((page.parts.len(), page.next_part_number_marker), (2, Some(2)), "a first page of two, with a next one");

    let paged = small_pages.list_parts(&authorized.object_key, &upload_id).await.unwrap().unwrap();
    let whole = server.state.objects.list_parts(&authorized.object_key, &upload_id).await.unwrap().unwrap();
    assert_eq!(paged.iter().map(|p| p.number).collect::<Vec<_>>(), vec![1, 2, 3], "every page read, in order");
    assert_eq!(paged, whole);
    assert!(paged.iter().all(|p| !p.etag.is_empty()), "with ETags");
    if !support::store_lacks("listed checksums", support::StoreCheck::PartChecksums) {
        assert!(paged.iter().all(|p| p.sha256.is_some()), "and checksums");
    }
}
