//! On SIGTERM (here: the shutdown future resolving) an idle keep-alive
//! connection from a `--trusted-proxy` is not closed under the proxy's
//! feet: a load balancer may be writing a request on it at that moment,
//! and it never sends a POST it has written to another instance (nginx
//! answers it `502`; the long soak of docs/reliability.md §3 saw three).
//! Such a request is answered, with `Connection: close`; anyone else's idle
//! connection closes at once, as before.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use support::{Options, TestServer, until};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// The address the test's "proxy" connects from (Linux routes all of
/// 127.0.0.0/8 to the loopback); the other client is 127.0.0.1.
const PROXY: &str = "127.0.0.2";

async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(to).await.unwrap()
}

/// Sends `GET /healthz` on a kept-alive connection and reads one whole
/// answer: its head (lower case) and whether the connection then ended.
async fn health(stream: &mut TcpStream) -> Option<String> {
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: upload-once\r\n\r\n").await.ok()?;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&bytes).to_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                return Some(text[..end].to_owned());
            }
        }
    }
}

/// Whether the server closed the connection (an orderly end or a reset).
async fn closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1];
    matches!(tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await, Ok(Ok(0) | Err(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_on_a_proxys_idle_connection_is_answered_after_the_stop_and_others_close_at_once() {
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let server = TestServer::start_with(Options {
        configure: Some(Box::new(|c| {
            c.limits.trusted_proxies = vec![PROXY.parse().unwrap()];
            c.limits.shutdown_proxy_grace = Duration::from_secs(30);
        })),
        shutdown: Some(stopped),
        ..Default::default()
    })
    .await;
    let address: SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let mut proxy = connect_from(PROXY, address).await;
    let mut browser = connect_from("127.0.0.1", address).await;
    for stream in [&mut proxy, &mut browser] {
        let head = health(stream).await.expect("answered before the stop");
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(!head.contains("connection: close"), "{head}");
    }

    stop.send(()).unwrap();
    until("new connections to be refused", Duration::from_secs(10), || std::net::TcpStream::connect(address).is_err())
        .await;
    assert!(closed(&mut browser).await, "an idle connection from anyone but a proxy closes at once");

    // The proxy, not yet aware of the stop, sends one more request on its
    // kept connection: answered, and told it is the last.
    let head = health(&mut proxy).await.expect("the request the proxy sent after the stop is answered, not cut");
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("connection: close"), "the answer closes the connection: {head}");
    assert!(closed(&mut proxy).await, "the server closes it after that answer");
    until("the server to stop", Duration::from_secs(10), || server.stopped()).await;
}
