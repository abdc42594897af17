//! A session sees only its own attempts: another session's attempt id gets
//! exactly the answer a never-used id gets, on every endpoint that asks
//! about an attempt (only authorize, which would make a second row, refuses
//! it: `attempt_ids_are_unique_across_sessions`); credentials are checked
//! with stable codes; and tokens and codes are long and random.

use crate::support;

use std::collections::{BTreeSet, HashSet};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{Guest, TestServer, problem};
use uuid::Uuid;

/// Everything a caller can observe of an answer, with `id` masked.
async fn observe(r: reqwest::Response, id: Uuid) -> (StatusCode, String, Value) {
    let status = r.status();
    let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let text = r.text().await.unwrap().replace(&id.to_string(), "<id>");
    (status, ct, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// What `guest` is told about `id` by each endpoint that takes an attempt id.
async fn answers(guest: &Guest<'_>, id: Uuid) -> Vec<(&'static str, (StatusCode, String, Value))> {
    let server = guest.server;
    let get = guest.get(id).await;
    let batch =
        server.call(Method::POST, "/v1/attempts/status", Some(&guest.session), Some(json!({"ids": [id]}))).await;
    let renew = guest.renew(id).await;
    // A confirm that would reject the attempt if it reached it.
    let confirm_wrong = guest.confirm_raw(id, json!({"size": 999, "content_type": "image/png"})).await;
    let confirm_right = guest.confirm(id, 5).await;
    vec![
        ("GET /v1/attempts/{id}", observe(get, id).await),
        ("POST /v1/attempts/status", observe(batch, id).await),
        ("POST /v1/attempts/{id}/renew", observe(renew, id).await),
        ("POST /v1/attempts/{id}/confirm (mismatch)", observe(confirm_wrong, id).await),
        ("POST /v1/attempts/{id}/confirm", observe(confirm_right, id).await),
    ]
}

async fn assert_indistinguishable(snoop: &Guest<'_>, theirs: Uuid, what: &str) {
    let unknown = Uuid::new_v4();
    let for_theirs = answers(snoop, theirs).await;
    let for_unknown = answers(snoop, unknown).await;
    for ((endpoint, a), (_, b)) in for_theirs.iter().zip(&for_unknown) {
        assert_eq!(a, b, "{what}: {endpoint} tells another session's attempt from an unknown id");
    }
    // And what they both get is the not-found answer.
    assert_eq!(for_unknown[0].1.2, json!({"state": "not_found", "id": "<id>"}));
    assert_eq!(for_unknown[2].1.0, StatusCode::NOT_FOUND);
    assert_eq!(for_unknown[4].1.2["code"], "not_found");
}

#[tokio::test]
async fn another_sessions_attempt_looks_exactly_like_an_unknown_id() {
    let server = TestServer::start().await;
    let owner = server.guest().await;
    let same_event = server.guest_of(&owner.event).await;
    let other_event = server.guest().await;

    let (authorized, stored, confirmed) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    owner.authorize(authorized, 5).await;
    let a = owner.authorize(stored, 5).await;
    assert_eq!(server.put(a.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
    let c = owner.authorize(confirmed, 5).await;
    assert_eq!(server.put(c.put().unwrap(), b"hello".to_vec()).await.status(), StatusCode::OK);
    assert_eq!(owner.confirm(confirmed, 5).await.status(), StatusCode::OK);
    let before = owner.status(&[authorized, stored, confirmed]).await;

    for snoop in [&same_event, &other_event] {
        for (id, state) in [(authorized, "authorized"), (stored, "stored"), (confirmed, "confirmed")] {
            assert_indistinguishable(snoop, id, state).await;
        }
    }

    // The snooping changed nothing: no confirm, no rejection, no media.
    assert_eq!(owner.status(&[authorized, stored, confirmed]).await, before);
    assert_eq!(before["results"][1]["object_stored"], true);
    assert_eq!(server.counts().await, (3, 1));
    // The owner can still confirm the stored one.
    assert_eq!(owner.confirm(stored, 5).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn credentials_are_checked_with_stable_codes() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    let slug = guest.slug().to_owned();
    let authorize = json!({"id": id, "filename": "p.png", "size": 5, "content_type": "image/png"});
    let endpoints: Vec<(Method, String, Option<Value>)> = vec![
        (Method::POST, format!("/v1/events/{slug}/attempts"), Some(authorize)),
        (Method::GET, format!("/v1/attempts/{id}"), None),
        (Method::POST, "/v1/attempts/status".into(), Some(json!({"ids": [id]}))),
        (Method::POST, format!("/v1/attempts/{id}/renew"), None),
        (Method::POST, format!("/v1/attempts/{id}/confirm"), Some(json!({"size": 5, "content_type": "image/png"}))),
    ];
    let host_token = guest.event.host_token.clone();
    for (method, path, body) in &endpoints {
        let call = |bearer: Option<String>| {
            let mut req =
                server.http.request(method.clone(), server.url(path)).header("idempotency-key", id.to_string());
            if let Some(b) = bearer {
                req = req.header("authorization", b);
            }
            if let Some(body) = body {
                req = req.json(body);
            }
            req.send()
        };
        let cases = [
            (None, StatusCode::UNAUTHORIZED, "unauthorized"),
            (Some("Bearer ".to_owned()), StatusCode::UNAUTHORIZED, "unauthorized"),
            (Some(format!("Basic {}", guest.session)), StatusCode::UNAUTHORIZED, "unauthorized"),
            (Some("Bearer bogus".to_owned()), StatusCode::UNAUTHORIZED, "invalid_session"),
            (Some(format!("Bearer {}x", guest.session)), StatusCode::UNAUTHORIZED, "invalid_session"),
            (
                Some(format!("Bearer {}", &guest.session[..guest.session.len() - 1])),
                StatusCode::UNAUTHORIZED,
                "invalid_session",
            ),
            (Some(format!("Bearer {host_token}")), StatusCode::UNAUTHORIZED, "invalid_session"),
            (Some(format!("Bearer {}", support::ADMIN)), StatusCode::UNAUTHORIZED, "invalid_session"),
        ];
        for (bearer, status, code) in cases {
            let (s, p) = problem(call(bearer.clone()).await.unwrap()).await;
            assert_eq!((s, p["code"].as_str()), (status, Some(code)), "{method} {path} with {bearer:?}");
        }
    }
    assert_eq!(server.counts().await, (0, 0), "nothing was authorized without a session");

    // An expired session authorizes nothing new (what it may still do for
    // its own attempts: `a_lapsed_session_still_answers_for_its_own_attempts`).
    server.clock.advance(server.state.config.effective_session_ttl().as_millis() as i64);
    let r = guest.authorize_raw(json!({"id": id, "filename": "p.png", "size": 5, "content_type": "image/png"})).await;
    let (s, p) = problem(r).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_session")), "an expired session");
    assert_eq!(server.counts().await, (0, 0));
}

#[tokio::test]
async fn joining_needs_this_events_guest_code() {
    let server = TestServer::start().await;
    let event = server.create_event("party-a", 1000, &["image/*"], "required").await;
    let other = server.create_event("party-b", 1000, &["image/*"], "required").await;
    let code = event.guest_code.clone();
    let wrong = [
        "".to_owned(),
        "nope".to_owned(),
        other.guest_code.clone(),
        code[..code.len() - 1].to_owned(),
        format!("{code}x"),
    ];
    for guess in wrong {
        let r =
            server.call(Method::POST, "/v1/events/party-a/sessions", None, Some(json!({"guest_code": guess}))).await;
        let (s, p) = problem(r).await;
        assert_eq!((s, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("wrong_guest_code")), "{guess:?}");
    }
    let r = server.call(Method::POST, "/v1/events/party-a/sessions", None, Some(json!({"guest_code": code}))).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = server.call(Method::POST, "/v1/events/no-party/sessions", None, Some(json!({"guest_code": code}))).await;
    let (s, p) = problem(r).await;
    assert_eq!((s, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
}

/// Upper bound of the entropy of random strings, from what they look like:
/// length × log2(number of symbols seen across all samples). Also checks
/// that they are unique and that no position is (nearly) fixed.
fn estimated_bits(samples: &[String], what: &str) -> f64 {
    let unique: HashSet<&String> = samples.iter().collect();
    assert_eq!(unique.len(), samples.len(), "{what}: all unique");
    let len = samples[0].len();
    assert!(samples.iter().all(|s| s.len() == len), "{what}: fixed length");
    assert!(
        samples.iter().all(|s| s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')),
        "{what}: URL-safe characters only"
    );
    for pos in 0..len {
        let symbols: BTreeSet<u8> = samples.iter().map(|s| s.as_bytes()[pos]).collect();
        assert!(
            symbols.len() >= 16,
            "{what}: position {pos} takes only {} values over {} samples",
            symbols.len(),
            samples.len()
        );
    }
    let alphabet: BTreeSet<u8> = samples.iter().flat_map(|s| s.bytes()).collect();
    len as f64 * (alphabet.len() as f64).log2()
}

#[tokio::test]
async fn session_tokens_are_long_and_random() {
    let server = TestServer::start().await;
    let event = server.create_event("many-guests", 1000, &["image/*"], "required").await;
    let mut tokens = Vec::new();
    for _ in 0..200 {
        tokens.push(server.join(&event).await);
    }
    let bits = estimated_bits(&tokens, "session tokens");
    assert!(bits >= 122.0, "session tokens carry at most {bits:.0} bits");
    // Every one of them works, for this event only.
    let guest = Guest { server: &server, event: event.clone(), session: tokens[199].clone() };
    assert_eq!(guest.get(Uuid::new_v4()).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn host_and_wall_tokens_are_long_and_random() {
    let server = TestServer::start().await;
    let mut hosts = Vec::new();
    let mut walls = Vec::new();
    for i in 0..200 {
        let e = server.create_event(&format!("ev-{i}"), 1000, &["image/*"], "required").await;
        hosts.push(e.host_token);
        walls.push(e.wall_token);
    }
    for (what, tokens) in [("host tokens", &hosts), ("wall tokens", &walls)] {
        let bits = estimated_bits(tokens, what);
        assert!(bits >= 122.0, "{what} carry at most {bits:.0} bits");
    }
    let all: HashSet<&String> = hosts.iter().chain(&walls).collect();
    assert_eq!(all.len(), 400, "no token is both a host and a wall token");
}

#[tokio::test]
async fn guest_codes_carry_80_random_bits() {
    let server = TestServer::start().await;
    let mut codes = Vec::new();
    for i in 0..200 {
        codes.push(server.create_event(&format!("ev-{i}"), 1000, &["image/*"], "required").await.guest_code);
    }
    // A guest code is printed on cards and typed by people, so it is shorter
    // than a token: 80 bits, still far beyond guessing online.
    let bits = estimated_bits(&codes, "guest codes");
    assert!(bits >= 80.0, "guest codes carry at most {bits:.0} bits (length {}), 80 required", codes[0].len());
}
