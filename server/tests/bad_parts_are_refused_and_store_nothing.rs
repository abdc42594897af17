//! Bad input around parts is refused with a stable code and leaves nothing
//! stored: part numbers outside the plan, twice, or too many at once;
//! malformed bodies and checksums; parts of a single-PUT, confirmed or
//! expired attempt; part bytes of the wrong length or with the wrong
//! SHA-256; a part URL altered; a confirm while parts are missing.
//!
//! With S3 storage the PUT refusals are the store's own (403
//! `SignatureDoesNotMatch` for a length the URL was not signed for, 400
//! `BadDigest` for other bytes than the signed SHA-256), like a whole
//! object's; a request refused by its headers may get a closed connection
//! instead of an answer (S3 does that too). Either way, nothing is stored.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use support::multipart::{FILE, MIB, PART, options, part, plan, refused_by_s3};
use support::{Options, TestServer, is_s3, problem, s3_error};
use upload_once_server::secrets::sha256_hex;
use uuid::Uuid;

async fn refused(r: reqwest::Response, status: StatusCode, code: &str, what: &str) {
    let (s, body) = problem(r).await;
    assert_eq!((s, body["code"].as_str()), (status, Some(code)), "{what}: {body}");
}

#[tokio::test]
async fn part_requests_outside_the_plan_are_refused_before_anything_is_made() {
    let server = TestServer::start_with(options()).await;
    let guest = server.big_guest().await;
    // 101 parts and one more byte: more than one request may sign.
    let id = Uuid::new_v4();
    let big = guest.authorize_video(id, 101 * PART + 1).await;
    assert_eq!(plan(&big).part_count, 102);
    let sha = sha256_hex(b"a part");
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let cases = [
        ("part 0", json!({"parts": [{"number": 0}]}), unprocessable, "invalid_part"),
        ("past the last part", json!({"parts": [{"number": 103}]}), unprocessable, "invalid_part"),
        (
            "a part twice",
            json!({"parts": [{"number": 2}, {"number": 5}, {"number": 2}]}),
            unprocessable,
            "invalid_part",
        ),
        ("no part", json!({"parts": []}), unprocessable, "invalid_part"),
        (
            "101 parts",
            json!({"parts": (1..=101).map(|n| json!({"number": n})).collect::<Vec<_>>()}),
            unprocessable,
            "invalid_part",
        ),
        (
            "a checksum in capitals",
            json!({"parts": [{"number": 1, "sha256": sha.to_uppercase()}]}),
            unprocessable,
            "invalid_checksum",
        ),
        ("a short checksum", json!({"parts": [{"number": 1, "sha256": "abc"}]}), unprocessable, "invalid_checksum"),
        ("numbers as text", json!({"parts": [{"number": "1"}]}), StatusCode::BAD_REQUEST, "malformed_request"),
        ("a negative number", json!({"parts": [{"number": -1}]}), StatusCode::BAD_REQUEST, "malformed_request"),
        ("no parts field", json!({"numbers": [1]}), StatusCode::BAD_REQUEST, "malformed_request"),
    ];
    for (what, body, status, code) in cases {
        refused(guest.sign_raw(id, body).await, status, code, what).await;
    }
    let r = server
        .http
        .post(server.url(&format!("/v1/attempts/{id}/parts")))
        .bearer_auth(&guest.session)
        .body(r#"{"parts": [{"number": 1}]}"#)
        .send()
        .await
        .unwrap();
    refused(r, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "not JSON").await;
    assert_eq!(server.upload_id(&big.object_key).await, None, "no multipart upload was made for bad requests");
    assert_eq!(server.open_local_uploads().await, Vec::<String>::new());

    // At the edges the same attempt is fine: 100 parts at once, the last part.
    let hundred: Vec<_> = (1..=100).map(|n| json!({"number": n})).collect();
    assert_eq!(guest.sign_raw(id, json!({"parts": hundred})).await.status(), StatusCode::OK);
    assert_eq!(guest.sign_raw(id, json!({"parts": [{"number": 102}]})).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn parts_are_refused_for_attempts_that_take_none() {
    let server = TestServer::start_with(Options {
        attempt_ttl: Some(Duration::from_secs(3600)),
        url_ttl: Some(Duration::from_secs(600)),
        ..options()
    })
    .await;
    let guest = server.big_guest().await;
    let one = json!({"parts": [{"number": 1}]});

    let single = Uuid::new_v4();
    guest.authorize_video(single, MIB).await;
    refused(guest.sign_raw(single, one.clone()).await, StatusCode::UNPROCESSABLE_ENTITY, "not_multipart", "single PUT")
        .await;

    refused(guest.sign_raw(Uuid::new_v4(), one.clone()).await, StatusCode::NOT_FOUND, "not_found", "unknown attempt")
        .await;
    let other = server.big_guest().await;
    let theirs = Uuid::new_v4();
    other.authorize_video(theirs, FILE).await;
    refused(guest.sign_raw(theirs, one.clone()).await, StatusCode::NOT_FOUND, "not_found", "another session's attempt")
        .await;

    // Confirmed: its object can no longer change.
    let (confirmed, bytes, _, p) = guest.authorize_file(7).await;
    guest.send_parts(confirmed, &bytes, &p, &[1, 2, 3]).await;
    assert_eq!(guest.confirm_video(confirmed, FILE).await.status(), StatusCode::OK);
    refused(guest.sign_raw(confirmed, one.clone()).await, StatusCode::CONFLICT, "already_confirmed", "after confirm")
        .await;

    // Rejected: its rejection.
    let rejected = Uuid::new_v4();
    guest.authorize_video(rejected, FILE).await;
    let r = guest.confirm_raw(rejected, json!({"size": FILE + 1, "content_type": "video/mp4"})).await;
    refused(r, StatusCode::UNPROCESSABLE_ENTITY, "size_mismatch", "a wrong claim rejects").await;
    refused(
        guest.sign_raw(rejected, one.clone()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "size_mismatch",
        "after rejection",
    )
    .await;

    // Expired (the sweeper has not run yet).
    let expired = Uuid::new_v4();
    let key = guest.authorize_video(expired, FILE).await.object_key;
    server.clock.advance(3_600_000);
    refused(guest.sign_raw(expired, one.clone()).await, StatusCode::GONE, "expired", "after expiry").await;
    assert_eq!(server.upload_id(&key).await, None, "no upload made for an expired attempt");
}

#[tokio::test]
async fn part_bytes_of_another_length_or_digest_are_not_stored() {
    // Content-Length is signed, and the digest verified.
    if support::store_lacks("part_bytes_of_another_length_or_digest_are_not_stored", support::StoreCheck::Signatures) {
        return;
    }
    let server = TestServer::start_with(options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(8).await;
    let signed = guest.sign(id, &bytes, &plan, &[1, 3]).await;
    let (first, last) = (&signed[0].upload, &signed[1].upload);

    // One byte more, one byte less, the other part's bytes (right length for
    // neither), and other bytes of the right length.
    let mut longer = part(&bytes, &plan, 1);
    longer.push(0);
    let shorter = part(&bytes, &plan, 1)[1..].to_vec();
    let mut flipped = part(&bytes, &plan, 3);
    flipped[0] ^= 1;
    if is_s3() {
        for (what, body) in [("longer", longer), ("shorter", shorter)] {
            if let Some((status, code)) = refused_by_s3(&server, &first.url, first, body).await {
                assert_eq!((status, code.as_str()), (StatusCode::FORBIDDEN, "SignatureDoesNotMatch"), "{what}");
            }
        }
        let (status, code) = s3_error(server.put(last, flipped).await).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::BAD_REQUEST, "BadDigest"),
            "other bytes than the signed SHA-256"
        );
    } else {
        refused(server.put(first, longer).await, StatusCode::BAD_REQUEST, "length_mismatch", "one byte more").await;
        refused(server.put(first, shorter).await, StatusCode::BAD_REQUEST, "length_mismatch", "one byte less").await;
        refused(server.put(last, flipped).await, StatusCode::UNPROCESSABLE_ENTITY, "checksum_mismatch", "other bytes")
            .await;
        // Without Content-Length, the body itself is counted.
        let streamed = reqwest::Body::wrap_stream(futures_util::stream::iter(vec![Ok::<_, std::io::Error>(
            bytes::Bytes::from(part(&bytes, &plan, 3)[..1000].to_vec()),
        )]));
        let r = server.http.put(&last.url).body(streamed).send().await.unwrap();
        refused(r, StatusCode::BAD_REQUEST, "incomplete_body", "a body that ends early").await;
        assert_eq!(server.temp_files(), Vec::<String>::new(), "no received bytes are left behind");
    }
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, Vec::<u32>::new(), "no part was stored");

    // The right bytes go through the same URLs.
    assert_eq!(server.put(first, part(&bytes, &plan, 1)).await.status(), StatusCode::OK);
    assert_eq!(server.put(last, part(&bytes, &plan, 3)).await.status(), StatusCode::OK);
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, vec![1, 3]);
}

/// Every parameter of a part URL is signed: its part number, its upload,
/// its length and its digest cannot be changed.
#[tokio::test]
async fn an_altered_part_url_is_refused() {
    if support::store_lacks("an_altered_part_url_is_refused", support::StoreCheck::Signatures) {
        return;
    }
    let server = TestServer::start_with(options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(9).await;
    let signed = guest.sign(id, &bytes, &plan, &[1]).await;
    let url = reqwest::Url::parse(&signed[0].upload.url).unwrap();
    let number_param = if is_s3() { "partNumber" } else { "part" };
    let with = |name: &str, value: &str| {
        let mut altered = url.clone();
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .into_owned()
            .map(|(k, v)| if k == name { (k, value.to_owned()) } else { (k, v) })
            .collect();
        altered.query_pairs_mut().clear().extend_pairs(pairs);
        altered.to_string()
    };
    // Part 1's URL, as if for part 2 (same length, so only the signature can
    // tell).
    let as_part_two = with(number_param, "2");
    if is_s3() {
        if let Some((status, code)) =
            refused_by_s3(&server, &as_part_two, &signed[0].upload, part(&bytes, &plan, 2)).await
        {
            assert_eq!((status, code.as_str()), (StatusCode::FORBIDDEN, "SignatureDoesNotMatch"));
        }
    } else {
        let r = support::put_with(&server, &as_part_two, &signed[0].upload, &[], part(&bytes, &plan, 2).into()).await;
        refused(r, StatusCode::FORBIDDEN, "bad_signature", "another part number").await;
        let r = server
            .put(
                &upload_once_core::wire::UploadInstruction {
                    url: with("upload", &"0".repeat(32)),
                    ..signed[0].upload.clone()
                },
                part(&bytes, &plan, 1),
            )
            .await;
        refused(r, StatusCode::FORBIDDEN, "bad_signature", "another upload").await;
        let r = server
            .put(
                &upload_once_core::wire::UploadInstruction {
                    url: with("upload", "../../x"),
                    ..signed[0].upload.clone()
                },
                part(&bytes, &plan, 1),
            )
            .await;
        refused(r, StatusCode::FORBIDDEN, "bad_signature", "an upload id that is not one").await;
    }
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, Vec::<u32>::new());
}

#[tokio::test]
async fn a_confirm_while_parts_are_missing_changes_nothing() {
    let server = TestServer::start_with(options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(10).await;

    // Before any part was even signed.
    refused(guest.confirm_video(id, FILE).await, StatusCode::CONFLICT, "object_missing", "no upload yet").await;
    guest.send_parts(id, &bytes, &plan, &[1, 3]).await;
    for _ in 0..2 {
        let (status, body) = problem(guest.confirm_video(id, FILE).await).await;
        assert_eq!(
            (status, body["code"].as_str(), body["retryable"].as_bool()),
            (StatusCode::CONFLICT, Some("object_missing"), Some(true))
        );
    }
    let status = guest.status_of(id).await;
    assert_eq!(status["state"], "authorized", "still authorized");
    assert_eq!(status["object_stored"], false, "nothing was assembled");
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, vec![1, 3], "the parts stay");
    assert_eq!(server.counts().await.1, 0, "no media record");
    assert_eq!(server.stored_keys().await, Vec::<String>::new(), "no object");

    guest.send_parts(id, &bytes, &plan, &[2]).await;
    assert_eq!(guest.confirm_video(id, FILE).await.status(), StatusCode::OK, "then the same confirm succeeds");
}
