//! `/readyz` is public (a load balancer calls it without credentials), so
//! a stranger learns ready or not ready and nothing more: the reason, in
//! the database's or the object store's own words (a path on the server's
//! disk, a bucket, an S3 error that can quote a presigned URL), goes to the
//! admin token alone. And however often it is called, it probes (a write)
//! at most once a second.

use crate::support;

use reqwest::StatusCode;
use support::{ADMIN, Options, TestServer, is_s3, problem, unique_name};
use upload_once_server::ops::READINESS_TTL_MS;

/// A server whose object store cannot take uploads, and what the admin is
/// told about it.
async fn server_with_a_broken_store() -> (TestServer, String) {
    if is_s3() {
        let bucket = unique_name("gone-");
        let server = TestServer::start_with(Options { bucket: Some(bucket.clone()), ..Default::default() }).await;
        (server, bucket)
    } else {
        let server = TestServer::start().await;
        let uploads = server.state.config.data_dir.join("objects").join(".tmp");
        std::fs::remove_dir_all(&uploads).unwrap();
        std::fs::write(&uploads, b"not a directory").unwrap();
        let path = uploads.display().to_string();
        (server, path)
    }
}

#[tokio::test]
async fn a_stranger_learns_not_ready_and_nothing_of_why() {
    let (server, internal) = server_with_a_broken_store().await;
    let r = server.http.get(server.url("/readyz")).send().await.unwrap();
    assert!(r.headers().contains_key("retry-after"));
    let (status, body) = problem(r).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["code"], "not_ready", "{body}");
    let text = body.to_string();
    assert!(!text.contains(&internal), "the answer names {internal}: {text}");
    assert!(!text.contains("object store") && !text.contains("database"), "no internals: {text}");

    // A wrong token is a stranger too.
    let r = server.http.get(server.url("/readyz")).bearer_auth("not-the-admin").send().await.unwrap();
    assert_eq!(problem(r).await.1["code"], "not_ready");

    // The admin is told why.
    let r = server.http.get(server.url("/readyz")).bearer_auth(ADMIN).send().await.unwrap();
    let (status, body) = problem(r).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["code"], "object_store_unavailable");
    assert!(body["detail"].as_str().unwrap().contains(&internal), "{body}");
}

#[tokio::test]
async fn a_flood_of_readiness_calls_probes_once_a_second() {
    let server = TestServer::start().await;
    // The object store's probes, as `GET /metrics` counts them.
    let probes = async || {
        let text =
            server.http.get(server.url("/metrics")).bearer_auth(ADMIN).send().await.unwrap().text().await.unwrap();
        text.lines()
            .filter(|l| l.starts_with("upload_once_object_store_request_duration_seconds_count"))
            .filter(|l| l.contains("\"probe\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>()
    };
    let before = probes().await;
    for _ in 0..50 {
        assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), StatusCode::OK);
    }
    assert_eq!(probes().await - before, 1, "fifty calls within a second: one probe");
    server.clock.advance(READINESS_TTL_MS);
    for _ in 0..50 {
        assert_eq!(server.http.get(server.url("/readyz")).send().await.unwrap().status(), StatusCode::OK);
    }
    assert_eq!(probes().await - before, 2, "a second later: one more");
}
