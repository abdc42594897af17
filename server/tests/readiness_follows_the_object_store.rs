//! While the object store cannot take uploads, the readiness check fails
//! with `503 object_store_unavailable` and says why: the embedded store's
//! upload directory cannot be written, or the bucket is not there. When the
//! store is back, the server is ready again.

use crate::support;

use reqwest::StatusCode;
use support::{Options, TestServer, create_bucket, is_s3, problem, s3_endpoint, unique_name};

/// `GET /readyz` as the admin (who alone is told why), after a probe's
/// second: each call probes afresh.
async fn readyz(server: &TestServer) -> reqwest::Response {
    server.clock.advance(upload_once_server::ops::READINESS_TTL_MS);
    server.http.get(server.url("/readyz")).bearer_auth(support::ADMIN).send().await.unwrap()
}

async fn assert_not_ready_because_of_the_store(server: &TestServer, why: &str) {
    let r = readyz(server).await;
    assert!(r.headers().contains_key("retry-after"), "a retryable answer says when");
    let (status, body) = problem(r).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["code"], "object_store_unavailable");
    assert_eq!(body["retryable"], true);
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with("the object store cannot take uploads: "), "{detail}");
    assert!(detail.contains(why), "{detail} (expected to name {why:?})");
}

#[tokio::test]
async fn readiness_fails_while_the_object_store_cannot_take_uploads() {
    if is_s3() {
        // A bucket that is not there (yet).
        let bucket = unique_name("t-");
        let server = TestServer::start_with(Options { bucket: Some(bucket.clone()), ..Default::default() }).await;
        assert_not_ready_because_of_the_store(&server, &format!("no bucket `{bucket}`")).await;
        create_bucket(&s3_endpoint(), &bucket).await;
        assert_eq!(readyz(&server).await.status(), StatusCode::OK, "ready once the bucket exists");
    } else {
        // Where uploads are received, a file stands instead of a directory
        // (root may write anywhere, so permissions would not show this).
        let server = TestServer::start().await;
        assert_eq!(readyz(&server).await.status(), StatusCode::OK);
        let uploads = server.state.config.data_dir.join("objects").join(".tmp");
        std::fs::remove_dir_all(&uploads).unwrap();
        std::fs::write(&uploads, b"not a directory").unwrap();
        assert_not_ready_because_of_the_store(&server, &uploads.display().to_string()).await;
        std::fs::remove_file(&uploads).unwrap();
        std::fs::create_dir(&uploads).unwrap();
        assert_eq!(readyz(&server).await.status(), StatusCode::OK, "ready once uploads can be written again");
    }
}
