//! Rate limits per client address hold on opening sessions, authorizing,
//! confirming, asking the status and reading the wall: past its rate, a
//! client gets `429 rate_limited` with a `Retry-After` that says when its
//! next request is allowed (readable by a browser through CORS), and the
//! handler is never reached, so nothing is stored — while a guest of
//! another event, from another address, still uploads.

use crate::support;

use std::time::Duration;

use reqwest::{Client, Method, StatusCode};
use serde_json::json;
use support::limits::{client_from, with_limits};
use support::{TestServer, problem};
use upload_once_server::config::limits::parse_rate;
use uuid::Uuid;

const ABUSER: &str = "127.0.0.2";
const ORIGIN: &str = "http://app.example";

async fn send(http: &Client, server: &TestServer, method: Method, path: &str, bearer: &str) -> reqwest::Response {
    let mut req = http.request(method.clone(), server.url(path)).header("origin", ORIGIN).bearer_auth(bearer);
    if method == Method::POST {
        req = req.json(&json!({}));
    }
    req.send().await.unwrap()
}

/// The answer is a `429 rate_limited` problem with a `Retry-After` of at
/// least 1 s and at most one refill interval (an hour / 3), which a browser
/// may read.
async fn limited(r: reqwest::Response, what: &str) {
    let retry_after: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=1200).contains(&retry_after), "{what}: Retry-After {retry_after}");
    assert_eq!(r.headers()["access-control-allow-origin"], ORIGIN, "{what}");
    let exposed = r.headers()["access-control-expose-headers"].to_str().unwrap().to_ascii_lowercase();
    assert!(exposed.contains("retry-after"), "{what}: {exposed}");
    let (status, p) = problem(r).await;
    assert_eq!(
        (status, p["code"].as_str(), p["retryable"].as_bool()),
        (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited"), Some(true)),
        "{what}"
    );
}

#[tokio::test]
async fn each_kind_of_request_is_limited_per_address_and_other_addresses_go_on() {
    let mut options = with_limits(|l| {
        let three = parse_rate("3/h").unwrap();
        (l.rate_sessions, l.rate_authorize, l.rate_confirm, l.rate_status, l.rate_wall) =
            (three, three, three, three, three);
    });
    options.allowed_origins = vec![ORIGIN.into()];
    let server = TestServer::start_with(options).await;
    let event = server.create_event("target", 1_000_000, &["image/*"], "required").await;
    let slug = &event.event.slug;
    let abuser = client_from(ABUSER);

    // Sessions: three, then refused.
    let join = |http: &Client| {
        http.post(server.url(&format!("/v1/events/{slug}/sessions")))
            .header("origin", ORIGIN)
            .json(&json!({"guest_code": event.guest_code}))
            .send()
    };
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let r = join(&abuser).await.unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
        tokens.push(r.json::<serde_json::Value>().await.unwrap()["session_token"].as_str().unwrap().to_owned());
    }
    limited(join(&abuser).await.unwrap(), "a fourth session").await;
    let token = tokens[0].as_str();

    // Authorize (renew and parts count with it): three, then refused, and
    // nothing stored.
    let authorize = |id: Uuid| {
        abuser
            .post(server.url(&format!("/v1/events/{slug}/attempts")))
            .header("origin", ORIGIN)
            .bearer_auth(token)
            .json(&json!({"id": id, "filename": "p.png", "size": 5, "content_type": "image/png"}))
            .send()
    };
    let id = Uuid::new_v4();
    assert_eq!(authorize(id).await.unwrap().status(), StatusCode::CREATED);
    assert_eq!(authorize(Uuid::new_v4()).await.unwrap().status(), StatusCode::CREATED);
    let renew = send(&abuser, &server, Method::POST, &format!("/v1/attempts/{id}/renew"), token).await;
    assert_eq!(renew.status(), StatusCode::OK);
    limited(authorize(Uuid::new_v4()).await.unwrap(), "a fourth authorize").await;
    limited(send(&abuser, &server, Method::POST, &format!("/v1/attempts/{id}/renew"), token).await, "a renew").await;
    let parts = send(&abuser, &server, Method::POST, &format!("/v1/attempts/{id}/parts"), token).await;
    limited(parts, "signing parts").await;
    assert_eq!(server.counts().await, (2, 0), "nothing stored past the rate");

    // Confirm: three (answered, whatever they say), then refused.
    for _ in 0..3 {
        let r = send(&abuser, &server, Method::POST, &format!("/v1/attempts/{id}/confirm"), token).await;
        assert_ne!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    }
    limited(
        send(&abuser, &server, Method::POST, &format!("/v1/attempts/{id}/confirm"), token).await,
        "a fourth confirm",
    )
    .await;

    // Status, one or many, counted together, with the store calls each
    // makes (a HEAD of the live upload: a_status_costs_the_store_calls_it_makes).
    let r = abuser.post(server.url("/v1/attempts/status")).bearer_auth(token).json(&json!({"ids": [id]})).send();
    assert_eq!(r.await.unwrap().status(), StatusCode::OK, "the request and its HEAD: 2 of 3");
    limited(
        send(&abuser, &server, Method::GET, &format!("/v1/attempts/{id}"), token).await,
        "a second status and its HEAD",
    )
    .await;

    // The wall.
    let wall = |http: &Client| {
        http.get(server.url(&format!("/v1/events/{slug}/wall")))
            .header("origin", ORIGIN)
            .header("x-guest-code", &event.guest_code)
            .send()
    };
    for _ in 0..3 {
        assert_eq!(wall(&abuser).await.unwrap().status(), StatusCode::OK);
    }
    limited(wall(&abuser).await.unwrap(), "a fourth wall page").await;

    // Another address is not affected by any of it: a guest of another
    // event uploads, and reads the wall of this one.
    server.another_event_still_uploads().await;
    assert_eq!(wall(&server.http).await.unwrap().status(), StatusCode::OK);
    // Nor are the health checks, or the abuser's own storage PUTs (signed
    // URLs are not rate-limited).
    assert_eq!(server.call(Method::GET, "/healthz", None, None).await.status(), StatusCode::OK);
    assert_eq!(abuser.get(server.url("/readyz")).send().await.unwrap().status(), StatusCode::OK);
}

/// The allowance comes back over its period: a client that waits as long
/// as `Retry-After` said is let in again.
#[tokio::test]
async fn the_allowance_comes_back_after_retry_after() {
    let server = TestServer::start_with(with_limits(|l| l.rate_wall = parse_rate("2/2s").unwrap())).await;
    let event = server.create_event("refill", 1_000_000, &["image/*"], "required").await;
    let abuser = client_from(ABUSER);
    let wall = || abuser.get(server.url("/v1/events/refill/wall")).header("x-guest-code", &event.guest_code).send();
    assert_eq!(wall().await.unwrap().status(), StatusCode::OK);
    assert_eq!(wall().await.unwrap().status(), StatusCode::OK);
    let r = wall().await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert_eq!(retry_after, 1, "one request back every second, rounded up");
    // Waiting what it said is what the client is asked to do.
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    assert_eq!(wall().await.unwrap().status(), StatusCode::OK);
}
