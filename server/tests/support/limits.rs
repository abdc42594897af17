//! Helpers of the limits tests: a client from another loopback address, a
//! raw connection, and a guest of another event who must still get through.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::{Client, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

use super::{Options, TestServer};

/// An HTTP client whose connections come from `ip` (any 127.x.y.z is this
/// machine): to the server, another client address.
pub fn client_from(ip: &str) -> Client {
    Client::builder().local_address(ip.parse::<IpAddr>().unwrap()).build().unwrap()
}

/// Options that change only the limits.
pub fn with_limits(
    configure: impl FnOnce(&mut upload_once_server::config::limits::LimitsConfig) + Send + 'static,
) -> Options {
    Options { configure: Some(Box::new(move |c| configure(&mut c.limits))), ..Default::default() }
}

/// Joins `event` from `client`'s address: the guest, or `"<status>
/// <code>"` when refused.
pub async fn join_from<'a>(
    server: &'a TestServer,
    client: &Client,
    event: &upload_once_core::wire::CreateEventResponse,
) -> Result<super::Guest<'a>, String> {
    let r = client
        .post(server.url(&format!("/v1/events/{}/sessions", event.event.slug)))
        .json(&serde_json::json!({"guest_code": event.guest_code}))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let v: serde_json::Value = r.json().await.unwrap();
    match status {
        StatusCode::CREATED => {
            Ok(super::Guest { server, event: event.clone(), session: v["session_token"].as_str().unwrap().to_owned() })
        }
        _ => Err(format!("{} {}", status.as_u16(), v["code"].as_str().unwrap_or_default())),
    }
}

impl TestServer {
    /// A guest of a fresh event uploads a photo all the way (join,
    /// authorize, PUT, confirm) and it is stored once: the normal guest the
    /// limits must not stop.
    pub async fn another_event_still_uploads(&self) {
        let guest = self.guest().await;
        // Small, so it fits the tests' tight quotas too.
        let bytes = Uuid::new_v4().simple().to_string()[..5].as_bytes().to_vec();
        let (id, media) = guest.upload(bytes.clone()).await;
        assert_eq!(media.attempt_id, id);
        assert_eq!(media.size, bytes.len() as u64);
        assert_eq!(guest.status(&[id]).await["results"][0]["state"], "confirmed");
    }

    /// A raw TCP connection to the server.
    pub async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.base.trim_start_matches("http://")).await.unwrap()
    }
}

/// Reads what the server sends until it closes the connection (or `limit`
/// passes: a bound on a hang). `None` if it was still open at the limit.
pub async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut seen = Vec::new();
    let read = async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(limit, read).await.ok()?;
    Some(String::from_utf8_lossy(&seen).into_owned())
}

/// Writes `bytes`, one every `every`, until done or the server closes the
/// connection: how many it wrote.
pub async fn trickle(stream: &mut TcpStream, bytes: &[u8], every: Duration) -> usize {
    for (n, b) in bytes.iter().enumerate() {
        if stream.write_all(&[*b]).await.is_err() || stream.flush().await.is_err() {
            return n;
        }
        tokio::time::sleep(every).await;
    }
    bytes.len()
}

/// The status line's code of a raw HTTP answer.
pub fn status_of(answer: &str) -> Option<StatusCode> {
    answer.split(' ').nth(1).and_then(|code| code.parse::<u16>().ok()).and_then(|c| StatusCode::from_u16(c).ok())
}
