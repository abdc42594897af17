//! A request without valid credentials is refused (401, 403) before its
//! path, query or body is parsed: a stranger learns nothing of what an
//! endpoint expects from its validation errors, and nothing is stored.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use support::{TestServer, problem};
use uuid::Uuid;

/// Sends `body` as it is (JSON or not) with an optional bearer token.
async fn send(server: &TestServer, method: Method, path: &str, bearer: Option<&str>, body: &str) -> reqwest::Response {
    let mut req = server.http.request(method, server.url(path)).header("content-type", "application/json");
    if let Some(token) = bearer {
        req = req.bearer_auth(token);
    }
    req.body(body.to_owned()).send().await.unwrap()
}

/// The answer is `status` with `code`, and says nothing of the body.
async fn refused(r: reqwest::Response, status: StatusCode, code: &str, what: &str) {
    let (got, p): (StatusCode, Value) = problem(r).await;
    assert_eq!((got, p["code"].as_str()), (status, Some(code)), "{what}: {p}");
    let text = p.to_string().to_ascii_lowercase();
    for hint in ["missing field", "expected", "slug", "invalid type", "eof"] {
        assert!(!text.contains(hint), "{what} tells a stranger about the body ({hint}): {p}");
    }
}

#[tokio::test]
async fn strangers_get_401_or_403_whatever_they_send() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let slug = guest.slug().to_owned();
    let id = Uuid::new_v4();
    let broken = ["{}", "{\"slug\": 5", "not json"];

    for body in broken {
        // The admin API.
        refused(
            send(&server, Method::POST, "/v1/events", None, body).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "create event, no token",
        )
        .await;
        refused(
            send(&server, Method::POST, "/v1/events", Some(&guest.session), body).await,
            StatusCode::FORBIDDEN,
            "forbidden",
            "create event, a guest's token",
        )
        .await;
        // The host API: the ZIP link of an event.
        let archive = format!("/v1/events/{slug}/archive");
        refused(
            send(&server, Method::POST, &archive, None, body).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            &archive,
        )
        .await;
        refused(
            send(&server, Method::POST, &archive, Some(&guest.session), body).await,
            StatusCode::FORBIDDEN,
            "forbidden",
            &archive,
        )
        .await;
        // The guest API.
        for path in [
            format!("/v1/events/{slug}/attempts"),
            format!("/v1/attempts/{id}/confirm"),
            format!("/v1/attempts/{id}/renew"),
            format!("/v1/attempts/{id}/parts"),
            "/v1/attempts/status".to_owned(),
        ] {
            refused(
                send(&server, Method::POST, &path, None, body).await,
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                &path,
            )
            .await;
            refused(
                send(&server, Method::POST, &path, Some("not-a-session"), body).await,
                StatusCode::UNAUTHORIZED,
                "invalid_session",
                &path,
            )
            .await;
        }
    }
    assert_eq!(server.counts().await, (0, 0), "nothing stored");

    // With the credential, the same broken body is what is refused.
    let r = send(&server, Method::POST, &format!("/v1/events/{slug}/attempts"), Some(&guest.session), "{}").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}
