//! The guest code is public, so one guest may be hostile. Storage PUTs are
//! received in a pool of their own, apart from the API's requests, so
//! uploads that crawl can never make every other request answer `429`:
//! one client address holds at most `--max-puts-per-client` of them, one
//! signed URL carries one PUT at a time, a body slower than
//! `--put-min-rate` over `--put-rate-window` is cut, and so is one still
//! arriving past its URL's expiry and `--put-expiry-grace`. Meanwhile a
//! guest of another event authorizes, uploads and confirms as usual.
//!
//! The embedded store only: an S3 bucket receives the PUTs itself.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use support::limits::{read_until_closed, status_of};
use support::{Options, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use upload_once_core::wire::UploadInstruction;
use upload_once_server::config::Config;
use uuid::Uuid;

/// A bound on a hang, never waited out when the limits hold.
const BOUND: Duration = Duration::from_secs(15);
/// Where the hostile guest's requests come from (through the trusted proxy).
const HOSTILE: &str = "203.0.113.66";
const PER_CLIENT: u64 = 4;

async fn server(configure: impl FnOnce(&mut Config) + Send + 'static) -> Option<TestServer> {
    let server = TestServer::start_with(Options {
        configure: Some(Box::new(move |c: &mut Config| {
            // The test talks through 127.0.0.1 as a proxy: X-Forwarded-For
            // says which client a request is from.
            c.limits.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
            c.limits.max_puts_per_client = PER_CLIENT;
            configure(c);
        })),
        ..Default::default()
    })
    .await;
    if server.state.local_store.as_deref().is_none() {
        println!("a_hostile_guest_cannot_hold_the_upload_slots: the embedded store only (S3 receives the PUTs)");
        return None;
    }
    Some(server)
}

/// A PUT's request head for `upload` of `len` bytes, from `client`.
fn head(upload: &UploadInstruction, len: u64, client: &str) -> String {
    let url = reqwest::Url::parse(&upload.url).unwrap();
    let mut head = format!(
        "PUT {}?{} HTTP/1.1\r\nHost: upload-once\r\nContent-Length: {len}\r\nX-Forwarded-For: {client}\r\n",
        url.path(),
        url.query().unwrap_or_default()
    );
    for (k, v) in &upload.headers {
        if !k.eq_ignore_ascii_case("content-length") {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head + "\r\n"
}

/// `upload` with every letter of its object key's last segment
/// percent-encoded: another spelling of the same URL.
fn encoded(upload: &UploadInstruction) -> UploadInstruction {
    let mut url = reqwest::Url::parse(&upload.url).unwrap();
    let path = url.path().to_owned();
    let (dir, last) = path.rsplit_once('/').unwrap();
    let last: String = last
        .chars()
        .map(|c| if c.is_ascii_alphabetic() { format!("%{:02X}", c as u8) } else { c.to_string() })
        .collect();
    url.set_path(&format!("{dir}/{last}"));
    let mut other = upload.clone();
    other.url = url.to_string();
    other
}

/// A PUT that sends its head and one byte, then nothing: it holds a slot.
async fn crawling_put(server: &TestServer, upload: &UploadInstruction, len: u64) -> TcpStream {
    let mut stream = server.connect().await;
    stream.write_all(head(upload, len, HOSTILE).as_bytes()).await.unwrap();
    stream.write_all(&[1]).await.unwrap();
    stream.flush().await.unwrap();
    stream
}

/// The first bytes the server answers on `stream` within `limit`.
async fn answer_within(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    match tokio::time::timeout(limit, stream.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        _ => None,
    }
}

#[tokio::test]
async fn crawling_puts_take_no_more_than_their_share_and_are_cut() {
    let Some(server) = server(|c| {
        c.limits.put_min_rate = 64 * 1024;
        c.limits.put_rate_window = Duration::from_secs(2);
    })
    .await
    else {
        return;
    };
    let hostile = server.guest().await;
    let len = 1_000_000;
    let mut uploads = Vec::new();
    for _ in 0..=PER_CLIENT {
        uploads.push(hostile.authorize(Uuid::new_v4(), len).await.put().unwrap().clone());
    }
    // As many crawling PUTs as one address may hold.
    let mut held = Vec::new();
    for upload in &uploads[..PER_CLIENT as usize] {
        held.push(crawling_put(&server, upload, len).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // One more from that address is refused at once, without a slot.
    let mut refused = crawling_put(&server, &uploads[PER_CLIENT as usize], len).await;
    let answer = answer_within(&mut refused, BOUND).await.expect("an answer");
    assert_eq!(status_of(&answer), Some(StatusCode::TOO_MANY_REQUESTS), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("retry-after"), "{answer}");
    // A second PUT to a URL already receiving one, from another address.
    let mut twin = server.connect().await;
    twin.write_all(head(&uploads[0], len, "198.51.100.20").as_bytes()).await.unwrap();
    let answer = answer_within(&mut twin, BOUND).await.expect("an answer");
    assert_eq!(status_of(&answer), Some(StatusCode::TOO_MANY_REQUESTS), "one PUT per URL at a time: {answer}");
    // The same URL spelled otherwise (its key's letters percent-encoded):
    // the same object, so no second slot.
    let mut spelled = server.connect().await;
    spelled.write_all(head(&encoded(&uploads[0]), len, "198.51.100.21").as_bytes()).await.unwrap();
    let answer = answer_within(&mut spelled, BOUND).await.expect("an answer");
    assert_eq!(status_of(&answer), Some(StatusCode::TOO_MANY_REQUESTS), "one PUT per object at a time: {answer}");

    // Meanwhile another event's guest uploads as usual.
    server.another_event_still_uploads().await;

    // The crawling PUTs are cut for their rate, long before their idle
    // timeout (60 s), and nothing of them is stored.
    for stream in &mut held {
        let answer = read_until_closed(stream, BOUND).await.expect("cut");
        assert_eq!(status_of(&answer), Some(StatusCode::REQUEST_TIMEOUT), "{answer}");
    }
    assert_eq!(server.temp_files(), Vec::<String>::new());
    // Their slots are free again: the same address uploads whole.
    assert_eq!(server.put(&uploads[0], vec![1u8; len as usize]).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_put_still_arriving_past_its_urls_expiry_is_cut() {
    let Some(server) = server(|c| {
        c.url_ttl = Duration::from_secs(2);
        c.limits.put_expiry_grace = Duration::from_secs(1);
    })
    .await
    else {
        return;
    };
    let guest = server.guest().await;
    let len: u64 = 1_000_000;
    let upload = guest.authorize(Uuid::new_v4(), len).await.put().unwrap().clone();
    let stream = server.connect().await;
    let (mut read, mut write) = stream.into_split();
    write.write_all(head(&upload, len, HOSTILE).as_bytes()).await.unwrap();
    // Fast enough for the rate limit, too slow to end before the URL does.
    let reader = tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(BOUND, read.read(&mut buf)).await.ok().and_then(|r| r.ok()).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    });
    // 160 KB a second: the whole would take six seconds.
    let chunk = vec![2u8; 8 * 1024];
    let started = std::time::Instant::now();
    while !reader.is_finished() && started.elapsed() < BOUND {
        if write.write_all(&chunk).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let answer = reader.await.unwrap();
    assert_eq!(status_of(&answer), Some(StatusCode::FORBIDDEN), "{answer:?}");
    assert!(answer.contains("url_expired"), "{answer}");
    assert_eq!(server.temp_files(), Vec::<String>::new());
}

/// A flood of crawling PUTs through one event's public code, from several
/// addresses, holds every slot of the pool; a guest of another event then
/// still uploads: one of the flood's PUTs is cut (`429`, to be sent again
/// later) to make room, since the flood's event holds more than its share.
/// The flood's next PUT is refused while the other event sends.
#[tokio::test]
async fn a_flood_through_one_events_code_leaves_another_events_uploads_untouched() {
    const POOL: u64 = 4;
    let Some(server) = server(|c| {
        c.limits.max_puts_in_flight = POOL;
        c.limits.max_puts_per_client = 2;
    })
    .await
    else {
        return;
    };
    let hostile = server.guest().await;
    let len = 1_000_000;
    let mut uploads = Vec::new();
    for _ in 0..=POOL {
        uploads.push(hostile.authorize(Uuid::new_v4(), len).await.put().unwrap().clone());
    }
    // Every slot, from two addresses.
    let mut held = Vec::new();
    for (n, upload) in uploads[..POOL as usize].iter().enumerate() {
        let mut stream = server.connect().await;
        let from = if n % 2 == 0 { "203.0.113.70" } else { "203.0.113.71" };
        stream.write_all(head(upload, len, from).as_bytes()).await.unwrap();
        stream.write_all(&[1]).await.unwrap();
        held.push(stream);
    }
    support::until("the flood to hold every slot", BOUND, || server.state.limits.puts.in_flight() == POOL).await;

    // Another event's guest uploads, authorize to confirm.
    server.another_event_still_uploads().await;
    // One of the flood's PUTs was cut for it, and told to come back.
    let mut answers = Vec::new();
    for stream in &mut held {
        if let Some(answer) = answer_within(stream, Duration::from_millis(300)).await {
            answers.push(answer);
        }
    }
    assert_eq!(answers.len(), 1, "one PUT of the flood was cut: {answers:?}");
    assert_eq!(status_of(&answers[0]), Some(StatusCode::TOO_MANY_REQUESTS), "{}", answers[0]);
    assert!(answers[0].to_ascii_lowercase().contains("retry-after"), "{}", answers[0]);
    // While the other event sends, the flood gets no more than its share.
    let other = server.guest().await;
    let (id, attempt) = other.authorize_png(len, None).await;
    let mut honest = server.connect().await;
    honest.write_all(head(attempt.put().unwrap(), len, "198.51.100.30").as_bytes()).await.unwrap();
    honest.write_all(&[1]).await.unwrap();
    support::until("the other event's PUT to be received", BOUND, || server.state.limits.puts.in_flight() >= POOL)
        .await;
    let mut more = server.connect().await;
    more.write_all(head(&uploads[POOL as usize], len, "203.0.113.72").as_bytes()).await.unwrap();
    let answer = answer_within(&mut more, BOUND).await.expect("an answer");
    assert_eq!(status_of(&answer), Some(StatusCode::TOO_MANY_REQUESTS), "over its share: {answer}");
    let _ = id;
}
