//! The OpenAPI document the server serves is the one committed in
//! docs/openapi.json, byte for byte (pretty-printed): a refactoring that
//! changes a path, a parameter, a schema or a description fails here. A
//! change of the API that is meant updates the file in the same commit:
//! `UPDATE_OPENAPI=1 cargo test -p upload-once-server --test behaviours
//! the_openapi_document` writes it.

use crate::support;

use reqwest::{Method, StatusCode};
use support::TestServer;

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");

#[tokio::test]
async fn the_served_document_is_the_committed_one() {
    let server = TestServer::start().await;
    let r = server.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let served: serde_json::Value = r.json().await.unwrap();
    let served = serde_json::to_string_pretty(&served).unwrap() + "\n";
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(COMMITTED, &served).unwrap();
    }
    let committed = std::fs::read_to_string(COMMITTED).expect("docs/openapi.json");
    if served != committed {
        let line = served.lines().zip(committed.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "the served OpenAPI document differs from docs/openapi.json from line {}:\n  served:    {}\n  committed: {}",
            line + 1,
            served.lines().nth(line).unwrap_or("(end)"),
            committed.lines().nth(line).unwrap_or("(end)")
        );
    }
}
