//! `--metrics-listen` serves `GET /metrics` on an address of its own (a
//! private network, or loopback beside a scraper), and the public listener,
//! which strangers reach with the printed guest code, then answers `404`
//! for it: nothing of the server's insides is told to them.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;

#[tokio::test]
async fn metrics_answer_on_their_own_address_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_upload-once-server"));
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("UPLOAD_ONCE_")) {
        command.env_remove(name);
    }
    let mut child = command
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--www-dir", "none"])
        .args(["--admin-token", "metrics-test-admin-token-0123456789"])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (mut public, mut metrics) = (None, None);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = Instant::now();
    while (public.is_none() || metrics.is_none()) && started.elapsed() < Duration::from_secs(60) {
        let Some(Ok(line)) = lines.next() else { break };
        let address =
            |after: &str| line.split(after).nth(1).and_then(|r| r.split_whitespace().next()).map(str::to_owned);
        if line.contains("serving metrics on") {
            metrics = address("serving metrics on ");
        } else if line.contains("listening on") {
            public = address("listening on ");
        }
    }
    let (public, metrics) = (public.expect("the public address"), metrics.expect("the metrics address"));
    let http = reqwest::Client::new();
    let on_metrics = http.get(format!("http://{metrics}/metrics")).send().await.unwrap();
    let on_public = http.get(format!("http://{public}/metrics")).send().await.unwrap();
    let healthz = http.get(format!("http://{public}/healthz")).send().await.unwrap().status();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(on_metrics.status(), StatusCode::OK);
    assert!(on_metrics.text().await.unwrap().contains("upload_once_requests_in_flight"));
    assert_eq!(on_public.status(), StatusCode::NOT_FOUND, "not on the public listener");
    let body = on_public.text().await.unwrap();
    assert!(!body.contains("upload_once_"), "{body}");
    assert_eq!(healthz, StatusCode::OK, "the API is served as usual");
}
