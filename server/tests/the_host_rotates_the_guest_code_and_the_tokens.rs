//! The host rotates the guest code, the wall token or the host token
//! (`POST /v1/events/{slug}/rotate`): the old value stops working at once
//! (`403` like any wrong credential), the new one works. Guests who joined
//! with the old code keep their sessions: an upload under way finishes and
//! they can start new ones; only joining needs the new code.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{TestServer, problem};
use uuid::Uuid;

async fn rotate(server: &TestServer, slug: &str, token: &str, what: &str) -> Value {
    let r =
        server.call(Method::POST, &format!("/v1/events/{slug}/rotate"), Some(token), Some(json!({"what": what}))).await;
    assert_eq!(r.status(), StatusCode::OK, "rotate {what}");
    r.json().await.unwrap()
}

async fn join(server: &TestServer, slug: &str, code: &str) -> reqwest::Response {
    server.call(Method::POST, &format!("/v1/events/{slug}/sessions"), None, Some(json!({"guest_code": code}))).await
}

async fn wall(server: &TestServer, slug: &str, bearer: Option<&str>, code: Option<&str>) -> StatusCode {
    let path = match code {
        Some(code) => format!("/v1/events/{slug}/wall?code={code}"),
        None => format!("/v1/events/{slug}/wall"),
    };
    server.call(Method::GET, &path, bearer, None).await.status()
}

async fn host_list(server: &TestServer, slug: &str, token: &str) -> StatusCode {
    server.call(Method::GET, &format!("/v1/events/{slug}/media"), Some(token), None).await.status()
}

#[tokio::test]
async fn a_rotated_credential_stops_working_at_once_and_guests_already_in_keep_uploading() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let other = server.guest().await;
    let slug = guest.slug().to_owned();
    let event = guest.event.clone();

    // A guest who joined with the old code is in the middle of an upload.
    let id = Uuid::new_v4();
    let a = guest.authorize(id, 6).await;

    // The guest code.
    let code = rotate(&server, &slug, &event.host_token, "guest_code").await;
    assert_eq!(code.as_object().unwrap().len(), 1, "only the rotated credential: {code}");
    let code = code["guest_code"].as_str().unwrap().to_owned();
    assert_ne!(code, event.guest_code);
    let (status, p) = problem(join(&server, &slug, &event.guest_code).await).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("wrong_guest_code")));
    assert_eq!(join(&server, &slug, &code).await.status(), StatusCode::CREATED);
    assert_eq!(wall(&server, &slug, None, Some(&event.guest_code)).await, StatusCode::FORBIDDEN);
    assert_eq!(wall(&server, &slug, None, Some(&code)).await, StatusCode::OK);
    // The guest already in finishes the upload and may start another.
    assert_eq!(server.put(a.put().unwrap(), vec![0x89, b'P', b'N', b'G', 0, 1]).await.status(), StatusCode::OK);
    assert_eq!(guest.confirm(id, 6).await.status(), StatusCode::OK);
    guest.authorize(Uuid::new_v4(), 10).await;

    // The wall token.
    let wall_token =
        rotate(&server, &slug, &event.host_token, "wall_token").await["wall_token"].as_str().unwrap().to_owned();
    let (status, p) =
        problem(server.call(Method::GET, &format!("/v1/events/{slug}/wall"), Some(&event.wall_token), None).await)
            .await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")));
    assert_eq!(wall(&server, &slug, Some(&wall_token), None).await, StatusCode::OK);

    // The host token: the old one rotates it, and then opens nothing.
    let host_token =
        rotate(&server, &slug, &event.host_token, "host_token").await["host_token"].as_str().unwrap().to_owned();
    assert_eq!(host_list(&server, &slug, &event.host_token).await, StatusCode::FORBIDDEN);
    assert_eq!(host_list(&server, &slug, &host_token).await, StatusCode::OK);
    let r = server
        .call(
            Method::POST,
            &format!("/v1/events/{slug}/rotate"),
            Some(&event.host_token),
            Some(json!({"what": "guest_code"})),
        )
        .await;
    assert_eq!(problem(r).await.0, StatusCode::FORBIDDEN);
    assert_eq!(wall(&server, &slug, Some(&event.host_token), None).await, StatusCode::FORBIDDEN);
    assert_eq!(wall(&server, &slug, Some(&host_token), None).await, StatusCode::OK);

    // Only the host rotates; a body naming no credential is a 4xx problem
    // and changes nothing.
    let path = format!("/v1/events/{slug}/rotate");
    let (status, _) = problem(server.call(Method::POST, &path, None, Some(json!({"what": "guest_code"}))).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    for token in [&guest.session, &wall_token, &other.event.host_token] {
        let r = server.call(Method::POST, &path, Some(token), Some(json!({"what": "guest_code"}))).await;
        assert_eq!(problem(r).await.0, StatusCode::FORBIDDEN);
    }
    for body in [json!({"what": "admin_token"}), json!({}), json!({"what": 1})] {
        let (status, p) = problem(server.call(Method::POST, &path, Some(&host_token), Some(body.clone())).await).await;
        assert!(status.is_client_error() && p["code"] == "malformed_request", "{body}: {status} {p}");
    }
    assert_eq!(join(&server, &slug, &code).await.status(), StatusCode::CREATED, "the code is unchanged");

    // Another event's credentials are untouched.
    assert_eq!(join(&server, other.slug(), &other.event.guest_code).await.status(), StatusCode::CREATED);
    assert_eq!(host_list(&server, other.slug(), &other.event.host_token).await, StatusCode::OK);
    assert_eq!(wall(&server, other.slug(), Some(&other.event.wall_token), None).await, StatusCode::OK);
}
