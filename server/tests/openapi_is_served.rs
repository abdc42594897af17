//! `GET /openapi.json` is an OpenAPI 3.1 description of the API the router
//! serves. The router and the document come from one list of handlers, so
//! this test keeps no list of routes: it reads the document and checks the
//! server against it — every documented operation is served, each
//! documented path answers exactly the documented methods (its `405`'s
//! `Allow`), and an operation asks for credentials exactly when the
//! document gives it a security scheme.

use crate::support;

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{ADMIN, Guest, TestServer};
use uuid::Uuid;

/// The wire types (core/src/wire.rs) every client relies on.
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

const METHODS: &[&str] = &["get", "put", "post", "delete", "patch"];

async fn spec(server: &TestServer) -> Value {
    let r = server.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let ct = r.headers().get("content-type").unwrap().to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/json"), "{ct}");
    r.json().await.unwrap()
}

/// Every (method, path, operation) of the document.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().unwrap() {
            if METHODS.contains(&method.as_str()) {
                ops.push((method.clone(), path.clone(), op.clone()));
            }
        }
    }
    assert!(ops.len() >= 10, "the document lists the API: {ops:?}");
    ops
}

/// A value the schema accepts, as small as it gets: required fields only,
/// the first of an enum, a fresh UUID for a `uuid` string.
fn instance(doc: &Value, schema: &Value) -> Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap();
        return instance(doc, &doc["components"]["schemas"][name]);
    }
    for combinator in ["oneOf", "anyOf", "allOf"] {
        if let Some(first) = schema[combinator].as_array().and_then(|s| s.iter().find(|s| s["type"] != "null")) {
            return instance(doc, first);
        }
    }
    if let Some(values) = schema["enum"].as_array() {
        return values[0].clone();
    }
    let ty = match &schema["type"] {
        Value::Array(types) => types.iter().find(|t| *t != "null").cloned().unwrap_or(Value::Null),
        ty => ty.clone(),
    };
    match ty.as_str().unwrap_or("object") {
        "object" => {
            let mut object = serde_json::Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap();
                object.insert(name.to_owned(), instance(doc, &schema["properties"][name]));
            }
            Value::Object(object)
        }
        "array" => json!([]),
        "string" if schema["format"] == "uuid" => json!(Uuid::new_v4()),
        "string" => json!("x"),
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        _ => Value::Null,
    }
}

/// A concrete URL for a documented path: the guest's event for `{slug}`,
/// a fresh UUID for `{id}`, a well-formed key for `{key}`, a guest number
/// for `{guest}`, and every
/// required query parameter filled from its schema.
fn concrete(doc: &Value, guest: &Guest<'_>, path: &str, op: &Value) -> String {
    let mut url = path
        .replace("{slug}", guest.slug())
        .replace("{id}", &Uuid::new_v4().to_string())
        .replace("{key}", &format!("{}/0123abcd", guest.slug()))
        .replace("{guest}", "1");
    assert!(!url.contains('{'), "a path parameter this test cannot fill: {path}");
    let query: Vec<String> = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["in"] == "query" && p["required"] == true)
        .map(|p| {
            let value = instance(doc, &p["schema"]);
            format!(
                "{}={}",
                p["name"].as_str().unwrap(),
                value.as_str().map(str::to_owned).unwrap_or(value.to_string())
            )
        })
        .collect();
    if !query.is_empty() {
        url = format!("{url}?{}", query.join("&"));
    }
    url
}

/// The operation called as the document describes it, without credentials.
async fn call_without_credentials(
    server: &TestServer,
    doc: &Value,
    guest: &Guest<'_>,
    method: &str,
    path: &str,
    op: &Value,
) -> reqwest::Response {
    let m = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap();
    let mut request = server.http.request(m, server.url(&concrete(doc, guest, path, op)));
    let body = &op["requestBody"]["content"]["application/json"]["schema"];
    if !body.is_null() {
        request = request.json(&instance(doc, body));
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn the_description_is_openapi_3_1_with_the_wire_schemas_and_declared_security_schemes() {
    let server = TestServer::start().await;
    let doc = spec(&server).await;
    let version = doc["openapi"].as_str().unwrap_or_default();
    assert!(version.starts_with("3.1."), "openapi {version:?}");
    assert!(doc["info"]["title"].is_string());

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

    let declared: BTreeSet<&str> = doc["components"]["securitySchemes"]
        .as_object()
        .expect("security schemes")
        .keys()
        .map(String::as_str)
        .collect();
    let mut used = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        assert!(op["responses"].as_object().is_some_and(|r| !r.is_empty()), "{method} {path}: no responses");
        for requirement in op["security"].as_array().into_iter().flatten() {
            for scheme in requirement.as_object().unwrap().keys() {
                assert!(declared.contains(scheme.as_str()), "{method} {path} names the undeclared scheme {scheme}");
                used.insert(scheme.clone());
            }
        }
    }
    for scheme in ["admin", "host", "session", "wall"] {
        assert!(used.contains(scheme), "no operation uses the {scheme} scheme");
    }
}

/// Each documented operation is served: calling it reaches a handler (an
/// answer other than `route_not_found` / `method_not_allowed`).
#[tokio::test]
async fn every_documented_operation_is_served() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let doc = spec(&server).await;
    for (method, path, op) in operations(&doc) {
        let m = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap();
        let r = server
            .http
            .request(m, server.url(&concrete(&doc, &guest, &path, &op)))
            .bearer_auth(ADMIN)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body = r.text().await.unwrap();
        assert!(
            !body.contains("route_not_found")
                && !body.contains("method_not_allowed")
                && status != StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path} is documented but not served: {status} {body}"
        );
    }
}

/// A method a path does not document is refused with `405`, and its
/// `Allow` names exactly the documented methods: nothing is routed on a
/// documented path without being documented.
#[tokio::test]
async fn each_documented_path_allows_exactly_its_documented_methods() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let doc = spec(&server).await;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let documented: BTreeSet<String> = item
            .as_object()
            .unwrap()
            .keys()
            .filter(|m| METHODS.contains(&m.as_str()))
            .map(|m| m.to_ascii_uppercase())
            .collect();
        let (_, _, op) = operations(&doc).into_iter().find(|(_, p, _)| p == path).unwrap();
        let other = ["DELETE", "PATCH"].into_iter().find(|m| !documented.contains(*m)).unwrap();
        let r = server
            .http
            .request(Method::from_bytes(other.as_bytes()).unwrap(), server.url(&concrete(&doc, &guest, path, &op)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{other} {path}");
        let allow =
            r.headers().get("allow").unwrap_or_else(|| panic!("{other} {path}: a 405 without Allow")).to_str().unwrap();
        let allowed: BTreeSet<String> = allow.split(',').map(|m| m.trim().to_owned()).filter(|m| m != "HEAD").collect();
        assert_eq!(allowed, documented, "{path}: routed methods (Allow: {allow}) and documented methods differ");
    }
}

/// Called without credentials (and otherwise as documented), an operation
/// answers `401` exactly when the document gives it a security scheme.
#[tokio::test]
async fn an_operation_asks_for_credentials_exactly_when_its_documentation_says_so() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let doc = spec(&server).await;
    let mut secured = 0;
    for (method, path, op) in operations(&doc) {
        let declares_scheme =
            op["security"].as_array().into_iter().flatten().any(|r| !r.as_object().unwrap().is_empty());
        let r = call_without_credentials(&server, &doc, &guest, &method, &path, &op).await;
        let status = r.status();
        let body = r.text().await.unwrap();
        if declares_scheme {
            secured += 1;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {path} documents a security scheme but answered {body}"
            );
        } else {
            assert_ne!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {path} asks for credentials but documents no security scheme: {body}"
            );
        }
    }
    assert!(secured >= 8, "most of the API is secured: {secured} operations");
}
