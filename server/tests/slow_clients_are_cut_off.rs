//! A client that holds a connection without finishing its request is cut
//! off: headers that never end after `--header-timeout`, a JSON request
//! whose body trickles in after `--request-timeout` (`408 request_timeout`),
//! and a storage PUT whose body stops arriving after `--put-idle-timeout`
//! (`408 request_timeout`, its temporary file removed, nothing stored) —
//! while a guest of another event still uploads.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use support::TestServer;
use support::limits::{read_until_closed, status_of, with_limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

/// Longer than any limit below: a bound on a hang, never waited out when
/// the limit holds.
const BOUND: Duration = Duration::from_secs(15);

#[tokio::test]
async fn headers_that_never_end_are_cut_after_the_header_timeout() {
    let server = TestServer::start_with(with_limits(|l| l.header_timeout = Duration::from_secs(1))).await;
    let mut stream = server.connect().await;
    // A request line and one header, then nothing.
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: upload-once\r\n").await.unwrap();
    let answer = read_until_closed(&mut stream, BOUND).await.expect("the server closes the connection");
    // hyper closes it, with or without a 408 first; it never answers the request.
    assert!(answer.is_empty() || status_of(&answer) == Some(StatusCode::REQUEST_TIMEOUT), "{answer:?}");
    server.another_event_still_uploads().await;
}

#[tokio::test]
async fn a_json_body_that_trickles_in_is_answered_408() {
    let server = TestServer::start_with(with_limits(|l| l.request_timeout = Duration::from_secs(1))).await;
    let event = server.create_event("trickle", 1_000_000, &["image/*"], "required").await;
    let body = format!("{{\"guest_code\": \"{}\"}}", event.guest_code);
    let mut stream = server.connect().await;
    let head = format!(
        "POST /v1/events/trickle/sessions HTTP/1.1\r\nHost: upload-once\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // One byte every 200 ms: the whole body would take seconds more than
    // the limit allows. The answer is read while the body trickles (bytes
    // written after the server closed would reset the connection and lose
    // it).
    let (mut read, mut write) = stream.into_split();
    let started = std::time::Instant::now();
    let reader = tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(BOUND, read.read(&mut buf)).await.ok().and_then(|r| r.ok()).unwrap_or(0);
        (String::from_utf8_lossy(&buf[..n]).into_owned(), started.elapsed())
    });
    for b in body.as_bytes() {
        if reader.is_finished() || write.write_all(&[*b]).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (answer, after) = reader.await.unwrap();
    assert_eq!(status_of(&answer), Some(StatusCode::REQUEST_TIMEOUT), "{answer:?}");
    assert!(answer.contains("request_timeout"), "{answer}");
    let whole = Duration::from_millis(200) * body.len() as u32;
    assert!(after < whole, "answered after {after:?}, before the body could be whole ({whole:?})");
    server.another_event_still_uploads().await;
}

#[tokio::test]
async fn a_storage_put_whose_body_stops_is_cut_and_leaves_nothing() {
    let server = TestServer::start_with(with_limits(|l| l.put_idle_timeout = Duration::from_secs(1))).await;
    if server.state.local_store.as_deref().is_none() {
        println!(
            "a_storage_put_whose_body_stops_is_cut_and_leaves_nothing: the embedded store only (S3 keeps its own timeouts)"
        );
        return;
    }
    let guest = server.guest().await;
    let id = Uuid::new_v4();
    let attempt = guest.authorize(id, 1_000).await;
    let upload = attempt.put().unwrap();
    let url = reqwest::Url::parse(&upload.url).unwrap();
    let path = format!("{}?{}", url.path(), url.query().unwrap_or_default());
    let mut head = format!("PUT {path} HTTP/1.1\r\nHost: upload-once\r\nContent-Length: 1000\r\n");
    for (k, v) in &upload.headers {
        if !k.eq_ignore_ascii_case("content-length") {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str("\r\n");
    let mut stream = server.connect().await;
    stream.write_all(head.as_bytes()).await.unwrap();
    // A tenth of the body, then the sender goes quiet.
    stream.write_all(&[7u8; 100]).await.unwrap();
    stream.flush().await.unwrap();
    let answer = read_until_closed(&mut stream, BOUND).await.unwrap_or_default();
    assert_eq!(status_of(&answer), Some(StatusCode::REQUEST_TIMEOUT), "{answer:?}");
    assert!(answer.contains("request_timeout"), "{answer}");
    assert_eq!(server.temp_files(), Vec::<String>::new(), "the temporary file is removed");
    assert!(!server.stored_keys().await.contains(&attempt.object_key), "nothing stored");
    // The guest sends it again, whole, and it is stored once.
    assert_eq!(server.put(upload, vec![7u8; 1_000]).await.status(), StatusCode::OK);
    assert_eq!(guest.confirm(id, 1_000).await.status(), StatusCode::OK);
    server.another_event_still_uploads().await;
}
