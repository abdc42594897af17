//! Every answer carries an `x-request-id` (a fresh UUID, or the one a load
//! balancer sent), and what the server logs while handling a request — JSON
//! lines by default — carries the same id, even from the handler's own task.

mod support;

use std::sync::OnceLock;

use reqwest::{Method, StatusCode};
use support::{CapturedLog, TestServer};
use tracing_subscriber::EnvFilter;
use upload_once_server::logs::{LogFormat, subscriber};
use uuid::Uuid;

/// This test binary's one subscriber: the server's JSON format, with the
/// server's debug events.
fn log() -> &'static CapturedLog {
    static LOG: OnceLock<CapturedLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let captured = CapturedLog::default();
        let writer = captured.clone();
        let filter = EnvFilter::new("upload_once_server=debug");
        tracing::subscriber::set_global_default(subscriber(LogFormat::Json, filter, move || writer.clone()))
            .expect("this test binary's only subscriber");
        captured
    })
}

fn request_id(r: &reqwest::Response) -> String {
    r.headers().get("x-request-id").expect("an x-request-id").to_str().unwrap().to_owned()
}

#[tokio::test]
async fn every_answer_carries_a_request_id_and_one_given_by_a_load_balancer_is_kept() {
    let server = TestServer::start().await;
    let ok = server.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(ok.status(), StatusCode::OK);
    let first = Uuid::parse_str(&request_id(&ok)).expect("a UUID");
    let problem = server.call(Method::GET, "/no/such/route", None, None).await;
    assert_eq!(problem.status(), StatusCode::NOT_FOUND);
    let second = Uuid::parse_str(&request_id(&problem)).expect("a UUID");
    assert_ne!(first, second, "each request its own id");

    let given = server.http.get(server.url("/healthz")).header("x-request-id", "lb-7f3a-0042").send().await.unwrap();
    assert_eq!(request_id(&given), "lb-7f3a-0042");
}

#[tokio::test]
async fn what_a_request_logs_carries_its_id_as_json() {
    let log = log();
    let server = TestServer::start().await;
    // The handler answers 404 and logs why (at debug), in its own task.
    let r = server.http.get(server.url("/v1/events/no-such-event/wall?code=secret-guest-code")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let id = request_id(&r);

    let lines = log.json_lines_with(&id);
    let line = lines
        .iter()
        .find(|l| l["fields"]["message"].as_str().is_some_and(|m| m.contains("no such event")))
        .unwrap_or_else(|| panic!("no log line of the handler carries {id}: {lines:?}"));
    assert_eq!(line["level"], "DEBUG");
    assert_eq!(line["span"]["request_id"], id.as_str());
    assert_eq!(line["span"]["method"], "GET");
    assert_eq!(line["span"]["path"], "/v1/events/no-such-event/wall");
    assert!(log.json_lines_with("secret-guest-code").is_empty(), "the query (codes, signatures) is never logged");
}
