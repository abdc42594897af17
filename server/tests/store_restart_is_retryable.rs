//! An S3 store that goes away — stopped in the middle of a confirm, or
//! answering 5xx — is `503 object_store_unavailable` (retryable, with
//! `Retry-After`), never a 500 and never a media row without its object;
//! once the store is back, the same confirm succeeds.
//!
//! Starts a test S3 server of its own (`UPLOAD_ONCE_TEST_S3_SERVER_BIN`, set
//! by `cargo xtask test server` in every combination), over whichever
//! database the run uses.

use crate::support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use support::{GatedObjects, Options, TestServer, problem};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A test S3 server process of this test's own.
struct Store {
    binary: PathBuf,
    root: tempfile::TempDir,
    addr: SocketAddr,
    child: Option<Child>,
}

impl Store {
    fn binary() -> Option<PathBuf> {
        let binary = std::env::var_os("UPLOAD_ONCE_TEST_S3_SERVER_BIN").map(PathBuf::from);
        let required = support::backends_required();
        if binary.is_none() {
            assert!(!required, "set UPLOAD_ONCE_TEST_S3_SERVER_BIN (cargo xtask test server does)");
            println!("store_restart_is_retryable: skipped, needs UPLOAD_ONCE_TEST_S3_SERVER_BIN (the test S3 server)");
        }
        binary
    }

    /// Starts the store on a port it picks itself (never one given back by
    /// the test), and learns the port from the line it prints.
    async fn start(binary: PathBuf) -> Store {
        let root = tempfile::tempdir().unwrap();
        let mut child = Command::new(&binary)
            .args(["--listen", "127.0.0.1:0"])
            .arg("--root")
            .arg(root.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the test S3 server");
        let stdout = child.stdout.take().expect("piped");
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).map(|_| line)
        })
        .await
        .unwrap()
        .expect("read the test S3 server's address");
        let addr = line
            .trim()
            .rsplit("http://")
            .next()
            .and_then(|a| a.parse::<SocketAddr>().ok())
            .unwrap_or_else(|| panic!("the test S3 server printed no address: {line:?}"));
        Store { binary, root, addr, child: Some(child) }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Restarts the process on the same port and root (the port it had
    /// is free again once it has stopped; if not yet, it tries again).
    async fn up(&mut self) {
        let started = Instant::now();
        loop {
            let mut child = Command::new(&self.binary)
                .args(["--listen", &self.addr.to_string()])
                .arg("--root")
                .arg(self.root.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start the test S3 server");
            while started.elapsed() < Duration::from_secs(20) {
                if tokio::net::TcpStream::connect(self.addr).await.is_ok() {
                    self.child = Some(child);
                    return;
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port is not free yet: try again
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = child.kill();
            let _ = child.wait();
            assert!(started.elapsed() < Duration::from_secs(20), "the test S3 server did not come up on {}", self.addr);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.down();
    }
}

async fn assert_unavailable(r: reqwest::Response, what: &str) {
    let retry_after = r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    let (status, p) = problem(r).await;
    assert_eq!(
        (status, p["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("object_store_unavailable")),
        "{what}: {p}"
    );
    assert_eq!(p["retryable"], true, "{what}");
    assert_eq!(retry_after.as_deref(), Some("1"), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_stopped_mid_confirm_is_503_and_the_retry_succeeds() {
    let Some(binary) = Store::binary() else {
        return;
    };
    let mut store = Store::start(binary).await;
    let entered = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (e2, r2) = (entered.clone(), release.clone());
    let server = TestServer::start_with(Options {
        s3_endpoint: Some(store.endpoint()),
        wrap_objects: Some(Box::new(move |inner| Arc::new(GatedObjects::heads(inner, e2, r2)))),
        ..Default::default()
    })
    .await;
    let guest = server.guest().await;
    let (id, a) = guest.authorize_and_put(b"hello").await;

    // The confirm stops inside its transaction, just before the HEAD; the
    // store goes down; the confirm goes on.
    let confirm = guest.spawn_confirm(id, serde_json::json!({"size": 5, "content_type": "image/png"}));
    entered.notified().await;
    store.down();
    release.add_permits(1);
    assert_unavailable(confirm.await.unwrap().unwrap(), "confirm while the store restarts").await;
    assert_eq!(server.counts().await.1, 0, "no media row without its object");

    // Everything that needs the store says so, the same way.
    release.add_permits(1000);
    assert_unavailable(guest.confirm(id, 5).await, "confirm while the store is down").await;
    let r = server
        .call(
            reqwest::Method::POST,
            "/v1/attempts/status",
            Some(&guest.session),
            Some(serde_json::json!({"ids": [id]})),
        )
        .await;
    assert_unavailable(r, "status while the store is down").await;
    assert_eq!(server.counts().await.1, 0);

    // Back up: the same confirm succeeds, once, and the bytes are served.
    store.up().await;
    let r = guest.confirm(id, 5).await;
    assert_eq!(r.status(), StatusCode::OK, "the retry");
    let media: Value = r.json().await.unwrap();
    assert_eq!(guest.confirm(id, 5).await.json::<Value>().await.unwrap()["id"], media["id"], "and only once");
    assert_eq!(server.counts().await.1, 1);
    // The host's original (on S3, a redirect to a presigned GET of the
    // bucket: the server is not in the way of the bytes).
    let listed = support::media::host_list(&guest).await;
    let original = listed[0]["original_url"].as_str().unwrap().to_owned();
    let r = server.http.get(&original).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"hello");

    // A store that stops and comes back loses nothing: the media row stays,
    // and its object is still in the bucket.
    store.down();
    assert_eq!(server.counts().await.1, 1);
    store.up().await;
    assert!(server.stored_keys().await.contains(&a.object_key));
}

/// A store that answers every request with `500`.
async fn broken_store() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let _ = socket.read(&mut buf).await;
                let body = "<Error><Code>InternalError</Code></Error>";
                let answer = format!(
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_answering_500_is_503_and_nothing_is_recorded() {
    let Some(binary) = Store::binary() else {
        return;
    };
    let store = Store::start(binary).await;
    let server = TestServer::start_with(Options { s3_endpoint: Some(store.endpoint()), ..Default::default() }).await;
    let guest = server.guest().await;
    let (id, _) = guest.authorize_and_put(b"hello").await;

    // A second instance over the same database whose store answers 500.
    let (broken, task) = broken_store().await;
    let other = TestServer::start_with(Options {
        s3_endpoint: Some(format!("http://{broken}")),
        bucket: server.bucket.clone(),
        database_url: server.database_url.clone(),
        ..Default::default()
    })
    .await;
    let via_other = support::Guest { server: &other, event: guest.event.clone(), session: guest.session.clone() };
    assert_unavailable(via_other.confirm(id, 5).await, "confirm, store answers 500").await;
    assert_eq!(server.counts().await.1, 0, "nothing recorded");
    task.abort();

    // The healthy instance confirms it.
    assert_eq!(guest.confirm(id, 5).await.status(), StatusCode::OK);
    assert_eq!(server.counts().await.1, 1);
}
