//! CORS grants exactly the configured origins what a browser client needs —
//! the preflights of the API calls and of the storage PUT, the headers they
//! send, the ETag they read — and grants nothing to any other origin.

use crate::support;

use reqwest::{Method, StatusCode};
use support::{Options, TestServer};
use uuid::Uuid;

const APP: &str = "http://app.example";

/// A preflight to a path of the server, or to an absolute URL (the storage
/// PUT: the server's own `/storage/`, or the bucket with S3 storage, whose
/// CORS rule docs/deploy.md describes and the test S3 server applies).
async fn preflight(server: &TestServer, path: &str, origin: &str, method: &str, headers: &str) -> reqwest::Response {
    let url = if path.starts_with("http") { path.to_owned() } else { server.url(path) };
    server
        .http
        .request(Method::OPTIONS, url)
        .header("origin", origin)
        .header("access-control-request-method", method)
        .header("access-control-request-headers", headers)
        .send()
        .await
        .unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers().get(name).map(|v| v.to_str().unwrap().to_owned())
}

fn list(r: &reqwest::Response, name: &str) -> Vec<String> {
    r.headers()
        .get_all(name)
        .iter()
        .flat_map(|v| v.to_str().unwrap().split(',').map(|s| s.trim().to_ascii_lowercase()).collect::<Vec<_>>())
        .collect()
}

async fn start() -> TestServer {
    TestServer::start_with(Options { allowed_origins: vec![APP.into()], ..Default::default() }).await
}

#[tokio::test]
async fn the_allowed_origin_passes_every_preflight_it_needs() {
    let server = start().await;
    let guest = server.guest().await;
    let a = guest.authorize(Uuid::new_v4(), 5).await;
    let upload = a.put().unwrap();
    let storage_url = upload.url.clone();
    // Exactly the headers the browser sends with the PUT.
    let put_headers = upload.headers.keys().map(|h| h.to_ascii_lowercase()).collect::<Vec<_>>().join(", ");
    let id = Uuid::new_v4();
    let cases = [
        (storage_url.as_str(), "PUT", put_headers.as_str()),
        (&format!("/v1/events/{}/attempts", guest.slug()), "POST", "content-type, authorization"),
        (&format!("/v1/attempts/{id}/confirm"), "POST", "content-type, authorization, idempotency-key"),
        ("/v1/attempts/status", "POST", "content-type, authorization"),
        (&format!("/v1/attempts/{id}"), "GET", "authorization"),
        (&format!("/v1/events/{}/wall", guest.slug()), "GET", "x-guest-code"),
    ];
    for (path, method, headers) in cases {
        if path == storage_url && support::store_lacks("the bucket's preflight", support::StoreCheck::Cors) {
            continue;
        }
        let r = preflight(&server, path, APP, method, headers).await;
        assert!(r.status().is_success(), "{method} {path}: {}", r.status());
        assert_eq!(header(&r, "access-control-allow-origin").as_deref(), Some(APP), "{method} {path}");
        let methods = list(&r, "access-control-allow-methods");
        assert!(methods.contains(&method.to_ascii_lowercase()), "{method} {path}: allow-methods {methods:?}");
        let allowed = list(&r, "access-control-allow-headers");
        for h in headers.split(',').map(str::trim) {
            assert!(allowed.iter().any(|a| a == h || a == "*"), "{method} {path}: {h} not in {allowed:?}");
        }
        assert!(list(&r, "vary").contains(&"origin".to_owned()), "{method} {path}: caches must key on Origin");
    }
}

#[tokio::test]
async fn the_allowed_origin_can_read_answers_and_the_etag() {
    let server = start().await;
    let guest = server.guest().await;
    let a = guest.authorize(Uuid::new_v4(), 5).await;
    let upload = a.put().unwrap();

    let mut req = server.http.put(&upload.url).header("origin", APP).body(b"hello".to_vec());
    for (k, v) in &upload.headers {
        req = req.header(k, v);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(header(&r, "etag").is_some());
    if !support::store_lacks("the bucket's CORS answer", support::StoreCheck::Cors) {
        assert_eq!(header(&r, "access-control-allow-origin").as_deref(), Some(APP));
        let exposed = list(&r, "access-control-expose-headers");
        assert!(exposed.contains(&"etag".to_owned()), "ETag must be readable from JS: {exposed:?}");
        assert!(exposed.contains(&"retry-after".to_owned()), "Retry-After must be readable from JS: {exposed:?}");
    }

    // Problems are readable too, so the client sees their codes.
    let r = server
        .http
        .get(server.url(&format!("/v1/attempts/{}", Uuid::new_v4())))
        .header("origin", APP)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(header(&r, "access-control-allow-origin").as_deref(), Some(APP));
}

#[tokio::test]
async fn any_other_origin_is_granted_nothing() {
    let server = start().await;
    let guest = server.guest().await;
    let a = guest.authorize(Uuid::new_v4(), 5).await;
    let upload = a.put().unwrap();
    let storage_path = upload.url.clone();
    let bucket_cors = !support::store_lacks("the bucket's preflights", support::StoreCheck::Cors);
    let others = [
        "http://evil.example",
        "https://app.example",
        "http://app.example:8080",
        "http://app.example.evil.example",
        "http://sub.app.example",
        "http://APP.example.evil",
        "null",
    ];
    for origin in others {
        for (path, method) in [(storage_path.as_str(), "PUT"), ("/v1/attempts/status", "POST")] {
            if path == storage_path && !bucket_cors {
                continue;
            }
            let r = preflight(&server, path, origin, method, "content-type, authorization").await;
            assert_eq!(header(&r, "access-control-allow-origin"), None, "preflight from {origin} for {method} {path}");
        }
        let r = server.http.get(server.url("/healthz")).header("origin", origin).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(header(&r, "access-control-allow-origin"), None, "GET from {origin}");
    }
    let r = server
        .call(Method::GET, &format!("/v1/events/{}/wall?code={}", guest.slug(), guest.event.guest_code), None, None)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header(&r, "access-control-allow-origin"), None, "no Origin, no grant");
    // Never a wildcard, never credentials.
    let r = preflight(&server, "/v1/attempts/status", APP, "POST", "content-type").await;
    assert_ne!(header(&r, "access-control-allow-origin").as_deref(), Some("*"));
    assert_eq!(header(&r, "access-control-allow-credentials"), None);
}

#[tokio::test]
async fn without_configured_origins_no_origin_is_granted() {
    let server = TestServer::start().await;
    let r = preflight(&server, "/v1/attempts/status", APP, "POST", "content-type").await;
    assert_eq!(header(&r, "access-control-allow-origin"), None);
}
