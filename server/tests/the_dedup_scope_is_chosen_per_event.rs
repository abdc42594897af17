//! Each event chooses where the same bytes are stored once: `dedup` is
//! `none`, `guest` or `event` (the default, also when sent as `null`), kept
//! with the event and shown in its description, beside the server's
//! multipart threshold (the client hashes smaller files whole before
//! authorize). Any other value is a `400 malformed_request` problem, and no
//! event is made.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{ADMIN, Options, TestServer, problem};
use upload_once_core::wire::{CreateEventResponse, SessionResponse};

fn definition(slug: &str, dedup: Option<Value>) -> Value {
    let mut body = json!({"slug": slug, "title": "Party", "max_file_bytes": 1000, "allowed_types": ["image/*"],
                          "moderation": "none"});
    if let Some(dedup) = dedup {
        body["dedup"] = dedup;
    }
    body
}

#[tokio::test]
async fn the_event_keeps_its_choice_and_shows_it_with_the_multipart_threshold() {
    let server = TestServer::start_with(Options { multipart_threshold: Some(7 << 20), ..Options::default() }).await;
    let cases = [
        ("left-out", None, "event"),
        ("null", Some(Value::Null), "event"),
        ("none", Some(json!("none")), "none"),
        ("guest", Some(json!("guest")), "guest"),
        ("event", Some(json!("event")), "event"),
    ];
    for (slug, dedup, stored) in cases {
        let r = server.call(Method::POST, "/v1/events", Some(ADMIN), Some(definition(slug, dedup))).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{slug}");
        let created: Value = r.json().await.unwrap();
        assert_eq!(created["event"]["dedup"], stored, "{slug}: the answer");
        assert_eq!(created["event"]["multipart_threshold"], 7 << 20, "{slug}: the server's threshold");

        let event: CreateEventResponse = serde_json::from_value(created).unwrap();
        let path = format!("/v1/events/{slug}/sessions");
        let r = server.call(Method::POST, &path, None, Some(json!({"guest_code": event.guest_code}))).await;
        let session: SessionResponse = r.json().await.unwrap();
        assert_eq!(session.event.dedup.as_str(), stored, "{slug}: what a guest is told");
        assert_eq!(session.event.multipart_threshold, Some(7 << 20));
        let row = server.state.records.event_by_slug(slug).await.unwrap().unwrap();
        assert_eq!(row.dedup.as_str(), stored, "{slug}: stored");
    }
}

#[tokio::test]
async fn an_unknown_scope_is_a_problem_and_makes_no_event() {
    let server = TestServer::start().await;
    for dedup in [json!("everyone"), json!("EVENT"), json!(""), json!(1), json!(true), json!(["event"])] {
        let r =
            server.call(Method::POST, "/v1/events", Some(ADMIN), Some(definition("party", Some(dedup.clone())))).await;
        let (status, p) = problem(r).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::BAD_REQUEST, Some("malformed_request")), "{dedup}");
        assert!(server.state.records.event_by_slug("party").await.unwrap().is_none(), "{dedup}: no event");
    }
    let r = server.call(Method::POST, "/v1/events", Some(ADMIN), Some(definition("party", Some(json!("guest"))))).await;
    assert_eq!(r.status(), StatusCode::CREATED, "the slug is still free");
}
