//! `GET /openapi.json` is an OpenAPI 3.1 description that lists every
//! route the router serves (and none it does not) with the main schemas.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use support::{ADMIN, TestServer};
use uuid::Uuid;

/// Every API route of `routes::app` (server/src/routes/mod.rs), as OpenAPI
/// paths, with its method.
const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("post", "/v1/events"),
    ("post", "/v1/events/{slug}/sessions"),
    ("post", "/v1/events/{slug}/attempts"),
    ("get", "/v1/events/{slug}/media"),
    ("get", "/v1/events/{slug}/wall"),
    ("post", "/v1/attempts/status"),
    ("get", "/v1/attempts/{id}"),
    ("post", "/v1/attempts/{id}/confirm"),
    ("post", "/v1/attempts/{id}/renew"),
    ("post", "/v1/media/{id}/moderation"),
    ("get", "/v1/media/{id}/content"),
    ("post", "/v1/admin/sweep"),
    ("put", "/storage/{key}"),
];

const SCHEMAS: &[&str] = &[
    "AttemptStatus",
    "AttemptResponse",
    "AttemptState",
    "AuthorizeRequest",
    "ConfirmRequest",
    "CreateEventRequest",
    "CreateEventResponse",
    "CreateSessionRequest",
    "SessionResponse",
    "StatusRequest",
    "StatusResponse",
    "Problem",
    "Media",
    "MediaSummary",
    "MediaListResponse",
    "ModerationRequest",
    "UploadInstruction",
    "WallResponse",
    "WallItem",
    "SweepReport",
];

async fn spec(server: &TestServer) -> Value {
    let r = server.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let ct = r.headers().get("content-type").unwrap().to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/json"), "{ct}");
    r.json().await.unwrap()
}

#[tokio::test]
async fn the_description_is_openapi_3_1_with_every_route_and_schema() {
    let server = TestServer::start().await;
    let doc = spec(&server).await;
    let version = doc["openapi"].as_str().unwrap_or_default();
    assert!(version.starts_with("3.1."), "openapi {version:?}");
    assert!(doc["info"]["title"].is_string());

    let paths = doc["paths"].as_object().expect("paths");
    for (method, path) in ROUTES {
        let op = &paths.get(*path).unwrap_or_else(|| panic!("{path} missing from the description"))[*method];
        assert!(op.is_object(), "{method} {path} missing");
        assert!(op["responses"].as_object().is_some_and(|r| !r.is_empty()), "{method} {path}: no responses");
    }
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().keys().filter(|k| !k.starts_with("parameters")).count()).sum();
    assert_eq!(documented, ROUTES.len(), "no undocumented extras: {:?}", paths.keys().collect::<Vec<_>>());

    let schemas = doc["components"]["schemas"].as_object().expect("components.schemas");
    for name in SCHEMAS {
        assert!(schemas.contains_key(*name), "schema {name} missing; have {:?}", schemas.keys().collect::<Vec<_>>());
    }
    // The state-tagged status union names every state.
    let status = serde_json::to_string(&schemas["AttemptStatus"]).unwrap();
    for state in ["authorized", "confirmed", "expired", "rejected", "not_found"] {
        assert!(status.contains(&format!("\"{state}\"")), "AttemptStatus lacks {state}");
    }
    let problem = &schemas["Problem"]["properties"];
    for field in ["type", "title", "status", "detail", "code", "retryable"] {
        assert!(problem.get(field).is_some(), "Problem lacks {field}");
    }
    for scheme in ["admin", "host", "session"] {
        assert!(doc["components"]["securitySchemes"][scheme].is_object(), "security scheme {scheme}");
    }
}

/// Each documented operation is served: calling it reaches a handler (an
/// answer other than `route_not_found` / `method_not_allowed`).
#[tokio::test]
async fn every_documented_operation_is_served() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let doc = spec(&server).await;
    let id = Uuid::new_v4().to_string();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys().filter(|k| !k.starts_with("parameters")) {
            let concrete =
                path.replace("{slug}", guest.slug()).replace("{id}", &id).replace("{key}", &format!("{}/0123abcd", guest.slug()));
            let m = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap();
            let r = server.http.request(m, server.url(&concrete)).bearer_auth(ADMIN).json(&serde_json::json!({})).send().await.unwrap();
            let status = r.status();
            let body = r.text().await.unwrap();
            assert!(
                !body.contains("route_not_found") && !body.contains("method_not_allowed") && status != StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path} is documented but not served: {status} {body}"
            );
        }
    }
}
