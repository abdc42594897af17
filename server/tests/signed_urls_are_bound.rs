//! A signed upload URL is bound to its key, length, content type, expiry
//! and checksum: change any of them and the PUT is refused; send anything
//! but exactly the signed bytes and nothing is stored; a confirmed object
//! never changes.
//!
//! With S3 storage the same rules hold, enforced by the bucket instead of
//! this server: the presigned URL signs the key, expiry, Content-Type,
//! Content-Length, `If-None-Match: *` and the checksum; the refusals are the
//! store's own (403 `SignatureDoesNotMatch` / `AccessDenied`, 412
//! `PreconditionFailed`, 400 `BadDigest`), which the client classifies the
//! same way (protocol §5.2).

use crate::support;

use std::time::Duration;

use bytes::Bytes;
use reqwest::{StatusCode, Url};
use support::{Options, TestServer, is_s3, problem, put_with, s3_error, try_put_with};
use upload_once_core::wire::{AttemptResponse, UploadInstruction};
use upload_once_server::secrets::sha256_hex;
use upload_once_server::storage::PutGrant;
use uuid::Uuid;

/// PUT `body` to `url` with an optional Content-Type.
async fn put_raw(server: &TestServer, url: &str, content_type: Option<&str>, body: reqwest::Body) -> reqwest::Response {
    let mut req = server.http.put(url).body(body);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    req.send().await.unwrap()
}

/// A chunked body (no Content-Length), so the server has to count.
fn streamed(parts: &[&[u8]]) -> reqwest::Body {
    let chunks: Vec<Result<Bytes, std::io::Error>> = parts.iter().map(|p| Ok(Bytes::copy_from_slice(p))).collect();
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

fn query(url: &str, name: &str) -> Option<String> {
    Url::parse(url).unwrap().query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

/// The URL with one query parameter replaced (`None` removes it).
fn with_param(url: &str, name: &str, value: Option<&str>) -> String {
    let mut parsed = Url::parse(url).unwrap();
    let mut pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().filter(|(k, _)| k != name).collect();
    if let Some(v) = value {
        pairs.push((name.to_owned(), v.to_owned()));
    }
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.to_string()
}

fn flip_last_hex(text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let last = chars.last_mut().unwrap();
    *last = if *last == '0' { '1' } else { '0' };
    chars.into_iter().collect()
}

async fn authorize(guest: &support::Guest<'_>, size: u64, sha: Option<String>) -> (Uuid, AttemptResponse) {
    guest.authorize_png(size, sha.as_deref()).await
}

/// A fresh guest of `server` and its attempt for 5 bytes (a PNG, claiming
/// `sha` if given).
async fn guest_with_attempt(server: &TestServer, sha: Option<String>) -> (support::Guest<'_>, Uuid, AttemptResponse) {
    let guest = server.guest().await;
    let (id, a) = authorize(&guest, 5, sha).await;
    (guest, id, a)
}

async fn assert_refused(r: reqwest::Response, status: StatusCode, code: &str, what: &str) {
    let (s, p) = problem(r).await;
    assert_eq!((s, p["code"].as_str()), (status, Some(code)), "{what}: {p}");
}

/// An S3 refusal: one of these statuses, and what the store said.
async fn assert_s3_refused(r: reqwest::Response, statuses: &[u16], what: &str) -> String {
    let (status, code) = s3_error(r).await;
    assert!(statuses.contains(&status.as_u16()), "{what}: the store answered {status} {code}");
    code
}

#[tokio::test]
async fn an_expired_url_is_refused() {
    if support::store_lacks("an_expired_url_is_refused", support::StoreCheck::UrlExpiry) {
        return;
    }
    // An S3 bucket checks expiry on its own (real) clock: sign for 3 s, and
    // wait. Elsewhere the test moves the server's clock.
    let url_ttl = Duration::from_secs(if is_s3() { 3 } else { 600 });
    let server = TestServer::start_with(Options { url_ttl: Some(url_ttl), ..Options::attempts_of_an_hour() }).await;
    let (guest, _, early) = guest_with_attempt(&server, None).await;
    let (_, late) = authorize(&guest, 5, None).await;
    if is_s3() {
        assert_eq!(server.put(early.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
        tokio::time::sleep(Duration::from_millis(3_500)).await;
        let code =
            assert_s3_refused(server.put(late.put().unwrap(), b"hello".to_vec()).await, &[403], "after the URL TTL")
                .await;
        assert_eq!(code, "AccessDenied");
        assert_eq!(server.stored_keys().await, vec![early.object_key.clone()], "nothing stored for the late PUT");
        return;
    }

    // Up to its expiry the URL works...
    server.clock.advance(598_000);
    assert_eq!(server.put(early.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
    // ...from its expiry on it does not.
    server.clock.advance(2_000);
    let r = server.put(late.put().unwrap(), b"hello".to_vec()).await;
    assert_refused(r, StatusCode::FORBIDDEN, "url_expired", "after the URL TTL").await;
    assert_eq!(server.stored_keys().await, vec![early.object_key.clone()], "nothing stored for the late PUT");
}

/// A PUT without `Content-Length` is refused by the store, `411
/// MissingContentLength`, as S3 documents ("required for PUTs", in its
/// common request headers): a bucket's creation and an object's, each
/// signed without a length. (A chunked PUT through an upload URL, which
/// signs the length, is refused too: see
/// `a_body_of_any_other_length_stores_nothing`.)
#[tokio::test]
async fn a_put_without_content_length_is_refused() {
    if !is_s3() || support::store_lacks("a_put_without_content_length_is_refused", support::StoreCheck::ContentLength) {
        return;
    }
    use rusty_s3::S3Action;
    let server = TestServer::start().await;
    let credentials = support::s3_credentials();
    let bucket_named = |name: String| {
        rusty_s3::Bucket::new(support::s3_endpoint().parse().unwrap(), rusty_s3::UrlStyle::Path, name, "us-east-1")
            .unwrap()
    };
    let ttl = Duration::from_secs(60);

    let other = bucket_named(support::unique_name("t-"));
    let url = rusty_s3::actions::CreateBucket::new(&other, &credentials).sign(ttl);
    let r = server.http.put(url).send().await.unwrap();
    assert_eq!(s3_error(r).await, (StatusCode::LENGTH_REQUIRED, "MissingContentLength".into()), "CreateBucket");

    let bucket = bucket_named(server.bucket.clone().unwrap());
    let url = rusty_s3::actions::PutObject::new(&bucket, Some(&credentials), "chunked").sign(ttl);
    let r = server.http.put(url).body(streamed(&[b"he", b"llo"])).send().await.unwrap();
    assert_eq!(s3_error(r).await, (StatusCode::LENGTH_REQUIRED, "MissingContentLength".into()), "PutObject");
    assert!(server.stored_keys().await.is_empty(), "nothing stored");
}

#[tokio::test]
async fn every_signed_parameter_is_bound() {
    if support::store_lacks("every_signed_parameter_is_bound", support::StoreCheck::Signatures) {
        return;
    }
    if is_s3() {
        return every_signed_parameter_is_bound_s3().await;
    }
    let server = TestServer::start().await;
    let sha = sha256_hex(b"hello");
    let (guest, _, plain) = guest_with_attempt(&server, None).await;
    let (_, hashed) = authorize(&guest, 5, Some(sha.clone())).await;
    let (_, other) = authorize(&guest, 5, None).await;
    let url = plain.put().unwrap().url.clone();
    let hashed_url = hashed.put().unwrap().url.clone();
    let other_url = other.put().unwrap().url.clone();
    let exp: i64 = query(&url, "exp").unwrap().parse().unwrap();
    let sig = query(&url, "sig").unwrap();

    let path_of = |u: &str, key: &str| {
        let mut parsed = Url::parse(u).unwrap();
        parsed.set_path(&format!("/storage/{key}"));
        parsed.to_string()
    };
    let hello = b"hello".to_vec();
    // (what, url, content type sent, body)
    let cases: Vec<(&str, String, &str, Vec<u8>)> = vec![
        ("key: last hex digit changed", path_of(&url, &flip_last_hex(&plain.object_key)), "image/png", hello.clone()),
        ("key: another attempt's key", path_of(&url, &other.object_key), "image/png", hello.clone()),
        (
            "key: another event",
            path_of(&url, &format!("other{}", &plain.object_key[plain.object_key.find('/').unwrap()..])),
            "image/png",
            hello.clone(),
        ),
        ("len + 1", with_param(&url, "len", Some("6")), "image/png", b"hello!".to_vec()),
        ("len - 1", with_param(&url, "len", Some("4")), "image/png", b"hell".to_vec()),
        ("ct", with_param(&url, "ct", Some("image/jpeg")), "image/jpeg", hello.clone()),
        ("ct: text/html", with_param(&url, "ct", Some("text/html")), "text/html", hello.clone()),
        ("exp later", with_param(&url, "exp", Some(&(exp + 3600).to_string())), "image/png", hello.clone()),
        ("exp earlier", with_param(&url, "exp", Some(&(exp - 1).to_string())), "image/png", hello.clone()),
        ("sha added", with_param(&url, "sha", Some(&sha)), "image/png", hello.clone()),
        ("sha changed", with_param(&hashed_url, "sha", Some(&sha256_hex(b"jello"))), "image/png", b"jello".to_vec()),
        ("sha removed", with_param(&hashed_url, "sha", None), "image/png", b"jello".to_vec()),
        (
            "sig: last hex digit changed",
            with_param(&url, "sig", Some(&flip_last_hex(&sig))),
            "image/png",
            hello.clone(),
        ),
        ("sig: truncated to 128 bits", with_param(&url, "sig", Some(&sig[..32])), "image/png", hello.clone()),
        ("sig: empty", with_param(&url, "sig", Some("")), "image/png", hello.clone()),
        ("sig: not hex", with_param(&url, "sig", Some(&"z".repeat(sig.len()))), "image/png", hello.clone()),
        (
            "sig: another URL's",
            with_param(&url, "sig", query(&other_url, "sig").as_deref()),
            "image/png",
            hello.clone(),
        ),
    ];
    for (what, tampered, ct, body) in cases {
        assert_ne!(tampered, url, "{what}: the URL really changed");
        let r = put_raw(&server, &tampered, Some(ct), body.into()).await;
        assert_refused(r, StatusCode::FORBIDDEN, "bad_signature", what).await;
    }
    assert!(server.stored_keys().await.is_empty(), "nothing stored");

    // The untampered URLs still work (the refusals were about the changes).
    assert_eq!(server.put(plain.put().unwrap(), hello.clone()).await.status(), StatusCode::OK);
    assert_eq!(server.put(hashed.put().unwrap(), hello).await.status(), StatusCode::OK);
}

async fn every_signed_parameter_is_bound_s3() {
    let server = TestServer::start().await;
    let sha = sha256_hex(b"hello");
    let (guest, _, plain) = guest_with_attempt(&server, None).await;
    let (_, hashed) = authorize(&guest, 5, Some(sha.clone())).await;
    let (_, other) = authorize(&guest, 5, None).await;
    let (up, hashed_up) = (plain.put().cloned().unwrap(), hashed.put().cloned().unwrap());
    let url = up.url.clone();
    let other_url = other.put().unwrap().url.clone();
    assert_eq!(up.headers.get("If-None-Match").map(String::as_str), Some("*"), "write-once: {:?}", up.headers);
    assert_eq!(
        hashed_up.headers.get("x-amz-checksum-sha256").map(String::as_str),
        Some("LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=")
    );
    let sig = query(&url, "X-Amz-Signature").unwrap();
    let expires: i64 = query(&url, "X-Amz-Expires").unwrap().parse().unwrap();
    let path_of = |u: &str, key: &str| {
        let mut parsed = Url::parse(u).unwrap();
        let bucket = server.bucket.clone().unwrap();
        parsed.set_path(&format!("/{bucket}/{key}"));
        parsed.to_string()
    };
    let hello = b"hello".to_vec();
    // (what, url, upload whose headers are sent, header changes, body)
    type Change<'a> = Vec<(&'a str, Option<&'a str>)>;
    let jello_sha = upload_once_server::storage::s3::checksum_header(&sha256_hex(b"jello")).unwrap();
    let cases: Vec<(&str, String, &UploadInstruction, Change, Vec<u8>)> = vec![
        ("key: last hex digit changed", path_of(&url, &flip_last_hex(&plain.object_key)), &up, vec![], hello.clone()),
        ("key: another attempt's key", path_of(&url, &other.object_key), &up, vec![], hello.clone()),
        (
            "X-Amz-Expires later",
            with_param(&url, "X-Amz-Expires", Some(&(expires + 3600).to_string())),
            &up,
            vec![],
            hello.clone(),
        ),
        ("X-Amz-Date earlier", with_param(&url, "X-Amz-Date", Some("20200101T000000Z")), &up, vec![], hello.clone()),
        (
            "X-Amz-SignedHeaders: host only",
            with_param(&url, "X-Amz-SignedHeaders", Some("host")),
            &up,
            vec![],
            hello.clone(),
        ),
        (
            "X-Amz-Credential: another key",
            with_param(
                &url,
                "X-Amz-Credential",
                Some(&query(&url, "X-Amz-Credential").unwrap().replacen('/', "x/", 1)),
            ),
            &up,
            vec![],
            hello.clone(),
        ),
        ("Content-Type: image/jpeg", url.clone(), &up, vec![("Content-Type", Some("image/jpeg"))], hello.clone()),
        ("Content-Type: text/html", url.clone(), &up, vec![("Content-Type", Some("text/html"))], hello.clone()),
        ("If-None-Match left out", url.clone(), &up, vec![("If-None-Match", None)], hello.clone()),
        ("length + 1", url.clone(), &up, vec![], b"hello!".to_vec()),
        ("length - 1", url.clone(), &up, vec![], b"hell".to_vec()),
        (
            "checksum: another one",
            hashed_up.url.clone(),
            &hashed_up,
            vec![("x-amz-checksum-sha256", Some(&jello_sha))],
            b"jello".to_vec(),
        ),
        (
            "checksum: left out",
            hashed_up.url.clone(),
            &hashed_up,
            vec![("x-amz-checksum-sha256", None)],
            b"jello".to_vec(),
        ),
        (
            "sig: last hex digit changed",
            with_param(&url, "X-Amz-Signature", Some(&flip_last_hex(&sig))),
            &up,
            vec![],
            hello.clone(),
        ),
        (
            "sig: truncated to 128 bits",
            with_param(&url, "X-Amz-Signature", Some(&sig[..32])),
            &up,
            vec![],
            hello.clone(),
        ),
        ("sig: empty", with_param(&url, "X-Amz-Signature", Some("")), &up, vec![], hello.clone()),
        ("sig: not hex", with_param(&url, "X-Amz-Signature", Some(&"z".repeat(sig.len()))), &up, vec![], hello.clone()),
        (
            "sig: another URL's",
            with_param(&url, "X-Amz-Signature", query(&other_url, "X-Amz-Signature").as_deref()),
            &up,
            vec![],
            hello.clone(),
        ),
    ];
    for (what, tampered, upload, changes, body) in cases {
        let r = put_with(&server, &tampered, upload, &changes, body.into()).await;
        let code = assert_s3_refused(r, &[400, 403], what).await;
        assert!(!code.is_empty(), "{what}: an S3 error code");
    }
    assert!(server.stored_keys().await.is_empty(), "nothing stored");

    // The untampered URLs still work (the refusals were about the changes).
    assert_eq!(server.put(&up, hello.clone()).await.status(), StatusCode::OK);
    assert_eq!(server.put(&hashed_up, hello).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_content_type_header_must_be_the_signed_one() {
    if support::store_lacks("the_content_type_header_must_be_the_signed_one", support::StoreCheck::Signatures) {
        return;
    }
    let server = TestServer::start().await;
    let (_guest, _, a) = guest_with_attempt(&server, None).await;
    let url = &a.put().unwrap().url;
    if is_s3() {
        // The bucket compares the signed header byte for byte: send exactly
        // `upload.headers` (the client does).
        let upload = a.put().unwrap();
        for ct in [
            Some("image/jpeg"),
            Some("text/html"),
            Some("application/octet-stream"),
            Some("Image/PNG; charset=binary"),
            None,
        ] {
            let r = put_with(&server, url, upload, &[("Content-Type", ct)], b"hello".to_vec().into()).await;
            assert_s3_refused(r, &[403], &format!("{ct:?}")).await;
        }
        assert!(server.stored_keys().await.is_empty());
        assert_eq!(server.put(upload, b"hello".to_vec()).await.status(), StatusCode::OK);
        return;
    }
    for ct in [Some("image/jpeg"), Some("text/html"), Some("application/octet-stream"), None] {
        let r = put_raw(&server, url, ct, b"hello".to_vec().into()).await;
        assert_refused(r, StatusCode::BAD_REQUEST, "content_type_mismatch", &format!("{ct:?}")).await;
    }
    assert!(server.stored_keys().await.is_empty());
    // Parameters and case do not matter: it is the same type.
    let r = put_raw(&server, url, Some("Image/PNG; charset=binary"), b"hello".to_vec().into()).await;
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_body_of_any_other_length_stores_nothing() {
    // Content-Length is signed.
    if support::store_lacks("a_body_of_any_other_length_stores_nothing", support::StoreCheck::Signatures) {
        return;
    }
    let server = TestServer::start().await;
    let (guest, _, a) = guest_with_attempt(&server, None).await;
    let upload = a.put().unwrap();
    let url = &upload.url;
    if is_s3() {
        // Content-Length is signed: any other length, or none (chunked), fails
        // the signature.
        let bodies: [(&str, reqwest::Body); 5] = [
            ("4 of 5 bytes", b"hell".to_vec().into()),
            ("6 of 5 bytes", b"hello!".to_vec().into()),
            ("4 of 5 bytes, chunked", streamed(&[b"he", b"ll"])),
            ("6 of 5 bytes, chunked", streamed(&[b"hel", b"lo!"])),
            ("empty, chunked", streamed(&[])),
        ];
        for (what, body) in bodies {
            // Refused, or the store hangs up on a body it will not take.
            if let Ok(r) = try_put_with(&server, url, upload, &[], body).await {
                assert_s3_refused(r, &[400, 403, 411], what).await;
            }
        }
        assert!(server.stored_keys().await.is_empty(), "nothing stored");
        assert!(server.state.objects.head(&a.object_key).await.unwrap().is_none());
        assert_eq!(guest.status(&[a.id]).await["results"][0]["object_stored"], false);
        // Exactly the signed length, chunked or not… but a chunked request has
        // no Content-Length to match the signed one: only a plain PUT works.
        if let Ok(r) = try_put_with(&server, url, upload, &[], streamed(&[b"he", b"llo"])).await {
            assert_s3_refused(r, &[400, 403, 411], "5 bytes, chunked").await;
        }
        assert!(server.stored_keys().await.is_empty(), "nothing stored");
        assert_eq!(server.put(upload, b"hello".to_vec()).await.status(), StatusCode::OK);
        assert_eq!(server.object_bytes(&a.object_key).await, b"hello");
        return;
    }

    // With a Content-Length that says so.
    let r = put_raw(&server, url, Some("image/png"), b"hell".to_vec().into()).await;
    assert_refused(r, StatusCode::BAD_REQUEST, "length_mismatch", "4 of 5 bytes, Content-Length 4").await;
    let r = put_raw(&server, url, Some("image/png"), b"hello!".to_vec().into()).await;
    assert_refused(r, StatusCode::BAD_REQUEST, "length_mismatch", "6 of 5 bytes, Content-Length 6").await;
    // Chunked, so only counting the bytes can tell.
    let r = put_raw(&server, url, Some("image/png"), streamed(&[b"he", b"ll"])).await;
    assert_refused(r, StatusCode::BAD_REQUEST, "incomplete_body", "4 of 5 bytes, chunked").await;
    let r = put_raw(&server, url, Some("image/png"), streamed(&[b"hel", b"lo!"])).await;
    assert_refused(r, StatusCode::BAD_REQUEST, "length_mismatch", "6 of 5 bytes, chunked").await;
    let r = put_raw(&server, url, Some("image/png"), streamed(&[])).await;
    let (status, _) = problem(r).await;
    assert!(status.is_client_error(), "an empty body is refused: {status}");

    assert!(server.stored_keys().await.is_empty(), "nothing stored");
    assert!(server.state.objects.head(&a.object_key).await.unwrap().is_none());
    assert!(server.temp_files().is_empty(), "no partial file left behind: {:?}", server.temp_files());
    assert_eq!(guest.status(&[a.id]).await["results"][0]["object_stored"], false);

    // Exactly the signed length, chunked or not, is stored.
    assert_eq!(put_raw(&server, url, Some("image/png"), streamed(&[b"he", b"llo"])).await.status(), StatusCode::OK);
    assert_eq!(server.object_bytes(&a.object_key).await, b"hello");
}

#[tokio::test]
async fn bytes_with_another_sha256_are_refused() {
    if support::store_lacks("bytes_with_another_sha256_are_refused", support::StoreCheck::PutChecksum) {
        return;
    }
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let sha = sha256_hex(b"hello");
    let (id, a) = authorize(&guest, 5, Some(sha.clone())).await;
    let upload = a.put().unwrap();
    if is_s3() {
        // The checksum is a signed header the bucket verifies against the
        // body, before it stores anything: S3's own refusal, `400` with an
        // XML error whose code is `BadDigest` (the client reports it as
        // `checksum_mismatch`).
        let r = server.put(upload, b"jello".to_vec()).await;
        let content_type = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(content_type.as_deref(), Some("application/xml"), "an S3 error document");
        assert_eq!(assert_s3_refused(r, &[400], "same length, other bytes").await, "BadDigest");
        assert!(server.stored_keys().await.is_empty(), "nothing stored");
        assert!(server.state.objects.head(&a.object_key).await.unwrap().is_none());
        assert_eq!(guest.status(&[id]).await["results"][0]["object_stored"], false);
        let r = server.put(upload, b"hello".to_vec()).await;
        assert_eq!(r.status(), StatusCode::OK);
        let head = server.state.objects.head(&a.object_key).await.unwrap().unwrap();
        assert_eq!(head.sha256.as_deref(), Some(sha.as_str()), "the store keeps the checksum");
        return;
    }
    assert_eq!(query(&upload.url, "sha").as_deref(), Some(sha.as_str()), "the URL carries the checksum");

    let r = server.put(upload, b"jello".to_vec()).await;
    let (status, p) = problem(r).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(p["code"], "checksum_mismatch", "same length, other bytes");
    assert!(server.stored_keys().await.is_empty(), "nothing stored");
    assert!(server.temp_files().is_empty());
    assert_eq!(guest.status(&[id]).await["results"][0]["object_stored"], false);

    let r = server.put(upload, b"hello".to_vec()).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["etag"].to_str().unwrap(), format!("\"{sha}\""), "the ETag is the SHA-256");
}

/// `PUT /storage/{key}` documents `checksum_mismatch` among its 400
/// answers (server/src/routes/storage.rs, the `utoipa::path` of
/// `put_object`), like the other body refusals of the storage endpoint.
#[tokio::test]
async fn a_checksum_refusal_at_put_is_the_documented_422() {
    if support::store_lacks("a_checksum_refusal_at_put_is_the_documented_422", support::StoreCheck::PutChecksum) {
        return;
    }
    let server = TestServer::start().await;
    let (_guest, _, a) = guest_with_attempt(&server, Some(sha256_hex(b"hello"))).await;
    let r = server.put(a.put().unwrap(), b"jello".to_vec()).await;
    if is_s3() {
        // The bucket's own refusal: 400 BadDigest (the client fails the transfer either way).
        assert_eq!(assert_s3_refused(r, &[400], "PUT with other bytes").await, "BadDigest");
        return;
    }
    // One code, one status everywhere: checksum_mismatch is 422, at PUT as at confirm.
    assert_refused(r, StatusCode::UNPROCESSABLE_ENTITY, "checksum_mismatch", "PUT with other bytes").await;
}

#[tokio::test]
async fn the_same_bytes_twice_are_one_object_and_other_bytes_are_refused() {
    let server = TestServer::start().await;
    let (_guest, _, a) = guest_with_attempt(&server, None).await;
    let upload = a.put().unwrap();

    let first = server.put(upload, b"hello".to_vec()).await;
    assert_eq!(first.status(), StatusCode::OK);
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    if is_s3() {
        // If-None-Match: * — any second PUT is refused with 412, and the
        // client goes on to confirm (protocol §5.2).
        for (what, body) in [("the same bytes", b"hello"), ("other bytes", b"jello")] {
            let code = assert_s3_refused(server.put(upload, body.to_vec()).await, &[412], what).await;
            assert_eq!(code, "PreconditionFailed", "{what}");
        }
        assert_eq!(server.object_bytes(&a.object_key).await, b"hello", "the object is unchanged");
        assert_eq!(server.stored_keys().await, vec![a.object_key.clone()], "one object");
        return;
    }
    let second = server.put(upload, b"hello".to_vec()).await;
    assert_eq!(second.status(), StatusCode::OK, "an idempotent repeat");
    assert_eq!(second.headers()["etag"].to_str().unwrap(), etag);
    assert_eq!(server.stored_keys().await, vec![a.object_key.clone()], "one object");

    let r = server.put(upload, b"jello".to_vec()).await;
    assert_refused(r, StatusCode::PRECONDITION_FAILED, "object_exists", "different bytes, same length").await;
    assert_eq!(server.object_bytes(&a.object_key).await, b"hello", "the object is unchanged");
    assert!(server.temp_files().is_empty());
}

#[tokio::test]
async fn a_confirmed_object_never_changes() {
    let server = TestServer::start().await;
    let (guest, id, a) = guest_with_attempt(&server, None).await;
    let upload: UploadInstruction = a.put().cloned().unwrap();
    assert_eq!(server.put(&upload, b"hello".to_vec()).await.status(), StatusCode::OK);
    assert_eq!(guest.confirm(id, 5).await.status(), StatusCode::OK);
    let before = server.state.objects.head(&a.object_key).await.unwrap().unwrap();

    for (what, body) in [("the same bytes", b"hello"), ("other bytes", b"jello")] {
        let r = server.put(&upload, body.to_vec()).await;
        if is_s3() {
            // The bucket knows no attempts; If-None-Match: * keeps the object.
            assert_s3_refused(r, &[412], what).await;
        } else {
            assert_refused(r, StatusCode::CONFLICT, "already_confirmed", what).await;
        }
    }
    let after = server.state.objects.head(&a.object_key).await.unwrap().unwrap();
    assert_eq!(after, before, "same metadata and ETag");
    assert_eq!(server.object_bytes(&a.object_key).await, b"hello", "same bytes");
    assert_eq!(server.stored_keys().await, vec![a.object_key.clone()]);
}

#[tokio::test]
async fn a_rejected_attempts_key_takes_no_upload() {
    let server = TestServer::start().await;
    let (guest, id, a) = guest_with_attempt(&server, None).await;
    let (status, p) = problem(guest.confirm(id, 6).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("size_mismatch")));

    let r = server.put(a.put().unwrap(), b"hello".to_vec()).await;
    if is_s3() {
        // The bucket cannot see the attempt's state: a URL handed out before
        // the rejection still works until it expires (at most the URL TTL).
        // The sweeper deletes what lands for a dead attempt (docs/deploy.md).
        assert_eq!(r.status(), StatusCode::OK);
        server.sweep().await;
        assert!(server.stored_keys().await.is_empty(), "the sweeper deleted it");
        return;
    }
    let (status, p) = problem(r).await;
    assert!(status.is_client_error(), "refused: {status} {p}");
    assert_eq!(p["code"], "expired", "the documented refusal for a dead attempt");
    assert!(server.stored_keys().await.is_empty(), "nothing stored");
    assert!(server.temp_files().is_empty());
}

#[tokio::test]
async fn an_expired_attempts_key_takes_no_upload() {
    let server = TestServer::start_with(Options::attempts_of_an_hour()).await;
    let (guest, _, a) = guest_with_attempt(&server, None).await;
    server.clock.advance(3_600_000);
    server.sweep().await;
    assert_eq!(guest.status(&[a.id]).await["results"][0]["state"], "expired");
    if is_s3() {
        // The bucket checks URLs on its own real clock (see
        // an_expired_url_is_refused), and no URL is ever signed past the
        // attempt's expiry: no fresh one is handed out now.
        let (status, p) = problem(guest.renew(a.id).await).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("expired")));
        return;
    }

    // Its own URL has expired with it...
    let r = server.put(a.put().unwrap(), b"hello".to_vec()).await;
    assert_refused(r, StatusCode::FORBIDDEN, "url_expired", "the attempt's own URL").await;
    // ...and even a URL this server signed that is still valid is refused:
    // the storage endpoint checks the attempt itself.
    let still_valid = server.state.objects.presign_put(&PutGrant {
        key: &a.object_key,
        content_type: "image/png",
        size: 5,
        sha256: None,
        expires_at: server.state.now() + 600_000,
    });
    let r = server.put(&still_valid, b"hello".to_vec()).await;
    assert_refused(r, StatusCode::GONE, "expired", "a valid signature for an expired attempt").await;
    assert!(server.stored_keys().await.is_empty(), "nothing stored");
    assert!(server.temp_files().is_empty());
}
