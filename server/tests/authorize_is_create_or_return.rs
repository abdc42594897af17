//! Authorize is create-or-return: the same attempt id with the same
//! parameters returns the same attempt (with a fresh upload URL), anything
//! else is refused before a single row is stored, and the object key is
//! always the server's own.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{Options, TestServer, problem};
use upload_once_core::time::parse_rfc3339;
use upload_once_core::wire::{AttemptResponse, AttemptState};
use upload_once_server::secrets::sha256_hex;
use uuid::Uuid;

const HOUR: i64 = 3_600_000;

fn png(id: Uuid, size: u64) -> Value {
    json!({"id": id, "filename": "photo.png", "size": size, "content_type": "image/png"})
}

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap_or_else(|| panic!("not RFC 3339: {rfc3339}"))
}

#[tokio::test]
async fn the_same_id_and_parameters_return_the_same_attempt_with_a_fresh_url() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    let body = json!({
        "id": id, "filename": "photo.png", "size": 5, "content_type": "image/png", "sha256": sha256_hex(b"hello"),
    });

    let first = guest.authorize_raw(body.clone()).await;
    assert_eq!(first.status(), StatusCode::CREATED, "the first call creates");
    let first: AttemptResponse = first.json().await.unwrap();
    assert_eq!((first.id, first.state), (id, AttemptState::Authorized));

    server.clock.advance(60_000);
    let second = guest.authorize_raw(body.clone()).await;
    assert_eq!(second.status(), StatusCode::OK, "a repeat returns the existing attempt");
    let second: AttemptResponse = second.json().await.unwrap();
    assert_eq!((second.id, second.state), (id, AttemptState::Authorized));
    assert_eq!(second.object_key, first.object_key, "the same object key");
    assert_eq!(second.expires_at, first.expires_at, "the same attempt: a repeat does not push its expiry back");
    let (u1, u2) = (first.put().cloned().unwrap(), second.put().cloned().unwrap());
    if !support::is_s3() {
        // (A presigned S3 URL is dated by the real clock, which this test does
        // not move: signed in the same second, it is the same URL.)
        assert_ne!(u2.url, u1.url, "a fresh URL");
    }
    assert_eq!(ms(&u2.expires_at) - ms(&u1.expires_at), 60_000, "signed from the time of the repeat");
    assert_eq!(server.counts().await, (1, 0), "one attempt row");

    // The fresh URL works, and after a confirm the repeat returns the
    // confirmed attempt with its media and no URL: a confirmed object is
    // never written again.
    assert_eq!(server.put(&u2, b"hello".to_vec()).await.status(), StatusCode::OK);
    let confirm = guest.confirm(id, 5).await;
    assert_eq!(confirm.status(), StatusCode::OK);
    let media: Value = confirm.json().await.unwrap();
    let third = guest.authorize_raw(body.clone()).await;
    assert_eq!(third.status(), StatusCode::OK);
    let third: AttemptResponse = third.json().await.unwrap();
    assert_eq!(third.state, AttemptState::Confirmed);
    assert_eq!(third.object_key, first.object_key);
    assert!(third.upload.is_none(), "no upload URL for a confirmed attempt");
    assert_eq!(third.media.as_ref().map(|m| m.id.to_string()), media["id"].as_str().map(str::to_owned));

    // Confirmed attempts never expire: past the attempt TTL it is still
    // returned as confirmed, not 410.
    server.clock.advance(server.state.lifetimes.attempt_ttl_ms() + HOUR);
    let fourth = guest.authorize_raw(body).await;
    assert_eq!(fourth.status(), StatusCode::OK);
    assert_eq!(fourth.json::<AttemptResponse>().await.unwrap().state, AttemptState::Confirmed);
    assert_eq!(server.counts().await, (1, 1));
}

#[tokio::test]
async fn the_same_id_with_other_parameters_is_id_reused() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    let sha = sha256_hex(b"hello");
    let original = json!({"id": id, "filename": "photo.png", "size": 5, "content_type": "image/png", "sha256": sha});
    assert_eq!(guest.authorize_raw(original.clone()).await.status(), StatusCode::CREATED);

    let changed: Vec<(&str, Value)> = vec![
        ("filename", json!({"id": id, "filename": "other.png", "size": 5, "content_type": "image/png", "sha256": sha})),
        ("size", json!({"id": id, "filename": "photo.png", "size": 6, "content_type": "image/png", "sha256": sha})),
        (
            "content_type",
            json!({"id": id, "filename": "photo.png", "size": 5, "content_type": "image/jpeg", "sha256": sha}),
        ),
        (
            "sha256",
            json!({"id": id, "filename": "photo.png", "size": 5, "content_type": "image/png", "sha256": sha256_hex(b"jello")}),
        ),
        ("sha256 left out", json!({"id": id, "filename": "photo.png", "size": 5, "content_type": "image/png"})),
    ];
    for (what, body) in changed {
        let (status, p) = problem(guest.authorize_raw(body).await).await;
        assert_eq!(
            (status, p["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("id_reused")),
            "different {what}"
        );
    }
    assert_eq!(server.counts().await, (1, 0), "nothing stored");

    // The original is untouched and still create-or-return.
    let again = guest.authorize_raw(original).await;
    assert_eq!(again.status(), StatusCode::OK);
    let again: AttemptResponse = again.json().await.unwrap();
    assert_eq!(again.state, AttemptState::Authorized);
    let status = guest.status(&[id]).await;
    assert_eq!(status["results"][0]["state"], "authorized");
}

#[tokio::test]
async fn a_request_the_contract_refuses_stores_nothing() {
    let server = TestServer::start().await;
    // guest(): 1 000 000 bytes at most, image/* and video/mp4.
    let guest = server.guest().await;
    let long_ascii = format!("{}.png", "a".repeat(252)); // 256 bytes
    let long_utf8 = "é".repeat(128); // 256 bytes, 128 chars
    let file = |filename: &str, size: u64, content_type: &str| json!({"filename": filename, "size": size, "content_type": content_type});
    let with_sha = |sha: &str| json!({"filename": "p.png", "size": 5, "content_type": "image/png", "sha256": sha});
    let cases: Vec<(&str, Value, &str)> = vec![
        ("one byte over the event limit", file("p.png", 1_000_001, "image/png"), "file_too_large"),
        ("u64::MAX bytes", file("p.png", u64::MAX, "image/png"), "file_too_large"),
        ("a type outside the event's list", file("p.pdf", 5, "application/pdf"), "type_not_allowed"),
        ("html", file("p.html", 5, "text/html"), "type_not_allowed"),
        ("video other than mp4", file("p.webm", 5, "video/webm"), "type_not_allowed"),
        ("not a content type", file("p.png", 5, "png"), "type_not_allowed"),
        ("empty content type (octet-stream)", file("p.png", 5, ""), "type_not_allowed"),
        ("an empty file", file("p.png", 0, "image/png"), "empty_file"),
        ("an empty filename", file("", 5, "image/png"), "invalid_filename"),
        ("a newline in the filename", file("a\nb.png", 5, "image/png"), "invalid_filename"),
        ("a NUL in the filename", file("a\u{0}b.png", 5, "image/png"), "invalid_filename"),
        ("a DEL in the filename", file("a\u{7f}b.png", 5, "image/png"), "invalid_filename"),
        ("a C1 control in the filename", file("a\u{85}b.png", 5, "image/png"), "invalid_filename"),
        ("a 256-byte ASCII filename", file(&long_ascii, 5, "image/png"), "invalid_filename"),
        ("a 256-byte UTF-8 filename of 128 chars", file(&long_utf8, 5, "image/png"), "invalid_filename"),
        ("an uppercase sha256", with_sha(&sha256_hex(b"hello").to_uppercase()), "invalid_checksum"),
        ("a 63-digit sha256", with_sha(&sha256_hex(b"hello")[..63]), "invalid_checksum"),
        ("a 65-digit sha256", with_sha(&format!("{}0", sha256_hex(b"hello"))), "invalid_checksum"),
        ("a non-hex sha256", with_sha(&"g".repeat(64)), "invalid_checksum"),
        ("an empty sha256", with_sha(""), "invalid_checksum"),
        ("a base64 sha256", with_sha("LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="), "invalid_checksum"),
    ];
    let mut refused_ids = Vec::new();
    for (what, mut body, code) in cases {
        let id = Uuid::new_v4();
        body["id"] = json!(id);
        let (status, p) = problem(guest.authorize_raw(body).await).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some(code)), "{what}");
        assert_eq!(server.counts().await, (0, 0), "{what}: nothing stored");
        refused_ids.push(id);
    }
    // Nothing was kept under the refused ids: each can still be created.
    for id in &refused_ids {
        assert_eq!(guest.authorize_raw(png(*id, 5)).await.status(), StatusCode::CREATED);
    }
    assert_eq!(server.counts().await.0, refused_ids.len() as u64);

    // The limits themselves are allowed.
    let at_limit = [
        file("p.png", 1_000_000, "image/png"),
        file(&"a".repeat(255), 5, "image/png"),
        file(&format!("{}a", "é".repeat(127)), 5, "image/png"),
        file("clip.mp4", 5, "video/mp4"),
        file("p.png", 5, "IMAGE/PNG; charset=binary"),
    ];
    for mut body in at_limit {
        body["id"] = json!(Uuid::new_v4());
        let r = guest.authorize_raw(body.clone()).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{body}");
    }
}

#[tokio::test]
async fn the_object_key_never_contains_anything_from_the_filename() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let names =
        ["../../x", "a/b.png", "..\\..\\evil.png", "/etc/passwd", "%2e%2e%2fx.png", "photo.png", "😀 .png", "CON"];
    let mut keys = Vec::new();
    for name in names {
        let r = guest
            .authorize_raw(json!({"id": Uuid::new_v4(), "filename": name, "size": 3, "content_type": "image/png"}))
            .await;
        assert_eq!(r.status(), StatusCode::CREATED, "{name}");
        let a: AttemptResponse = r.json().await.unwrap();
        let (prefix, rest) = a.object_key.split_once('/').unwrap_or_else(|| panic!("key {}", a.object_key));
        assert_eq!(prefix, slug, "{name}: key {}", a.object_key);
        assert!(
            rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{name}: key {} is not <slug>/<32 hex>",
            a.object_key
        );
        let upload = a.put().unwrap();
        assert!(
            upload.url.starts_with(&server.upload_url_prefix(&a.object_key)),
            "{name}: the URL addresses the server's key: {}",
            upload.url
        );
        assert_eq!(server.put(upload, b"abc".to_vec()).await.status(), StatusCode::OK, "{name}");
        keys.push(a.object_key);
    }
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), names.len(), "every attempt gets its own key");
    assert_eq!(server.stored_keys().await, keys, "each object landed exactly under its key, nowhere else");
}

#[tokio::test]
async fn authorize_after_the_attempt_ttl_is_410_expired() {
    let server = TestServer::start_with(Options::attempts_of_an_hour()).await;
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    assert_eq!(guest.authorize_raw(png(id, 5)).await.status(), StatusCode::CREATED);

    server.clock.advance(HOUR - 1);
    assert_eq!(guest.authorize_raw(png(id, 5)).await.status(), StatusCode::OK, "1 ms before expiry");

    server.clock.advance(1);
    let (status, p) = problem(guest.authorize_raw(png(id, 5)).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("expired")), "at expiry, before any sweep");

    server.sweep().await;
    let (status, p) = problem(guest.authorize_raw(png(id, 5)).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::GONE, Some("expired")), "after the sweep");
    assert_eq!(server.counts().await, (1, 0), "no second attempt was made");
}

#[tokio::test]
async fn a_session_only_authorizes_for_its_own_event() {
    let server = TestServer::start().await;
    let a = server.guest().await;
    let b = server.guest().await;
    for (session, other) in [(&a, &b), (&b, &a)] {
        let r = server
            .call(
                reqwest::Method::POST,
                &format!("/v1/events/{}/attempts", other.slug()),
                Some(&session.session),
                Some(png(Uuid::new_v4(), 5)),
            )
            .await;
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")));
    }
    assert_eq!(server.counts().await, (0, 0), "nothing stored");

    let r = server
        .call(
            reqwest::Method::POST,
            "/v1/events/no-such-event/attempts",
            Some(&a.session),
            Some(png(Uuid::new_v4(), 5)),
        )
        .await;
    let (status, p) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    assert_eq!(server.counts().await, (0, 0));
}
