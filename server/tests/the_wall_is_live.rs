//! The wall is live: `GET /v1/events/{slug}/wall/live` (the wall's own
//! credentials) streams Server-Sent Events, and a photo the host approves
//! reaches a listening wall within a second, through this instance's own
//! notice or, approved on another instance, through the feed's database
//! read. A take-down is streamed too, and a wall that comes back with its
//! Last-Event-ID gets what it missed and nothing twice.

use crate::support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;
use support::media::{moderate, settled, upload_as};
use support::{Guest, Options, TestServer, problem};
use uuid::Uuid;

/// One Server-Sent Event.
#[derive(Debug, Default)]
struct Sse {
    event: String,
    id: Option<String>,
    data: String,
}

/// A wall's live stream, read event by event.
struct Listening {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: String,
}

impl Listening {
    async fn open(guest: &Guest<'_>, last_event_id: Option<&str>) -> Listening {
        let url = guest.server.url(&format!("/v1/events/{}/wall/live?code={}", guest.slug(), guest.event.guest_code));
        let mut request = guest.server.http.get(url).header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        Listening::opened(request).await
    }

    /// A wall that opens the stream with a wall (or host) token.
    async fn open_with_token(server: &TestServer, slug: &str, token: &str) -> Listening {
        let url = server.url(&format!("/v1/events/{slug}/wall/live"));
        Listening::opened(server.http.get(url).bearer_auth(token).header("accept", "text/event-stream")).await
    }

    async fn opened(request: reqwest::RequestBuilder) -> Listening {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        Listening { body: Box::pin(r.bytes_stream()), buffer: String::new() }
    }

    /// The next event (comments skipped), or a panic after 10 s (a bound on
    /// a hang, not a measure).
    async fn next(&mut self) -> Sse {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let mut sse = Sse::default();
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            sse.event = v.trim().to_owned();
                        } else if let Some(v) = line.strip_prefix("id:") {
                            sse.id = Some(v.trim().to_owned());
                        } else if let Some(v) = line.strip_prefix("data:") {
                            sse.data.push_str(v.trim_start());
                        }
                    }
                    if !sse.event.is_empty() || !sse.data.is_empty() {
                        return sse;
                    }
                    continue;
                }
                let chunk = self.body.next().await.expect("the stream stays open").unwrap();
                self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
            }
        })
        .await
        .expect("an event within 10 s")
    }
}

impl Listening {
    /// The server ends the stream (after what it sent), within 10 s (a
    /// bound on a hang).
    async fn ends(&mut self) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(chunk) = self.body.next().await {
                let chunk = chunk.expect("the stream ends cleanly");
                let text = std::str::from_utf8(&chunk).unwrap();
                assert!(text.trim().is_empty() || text.starts_with(':'), "nothing but comments after the end: {text}");
            }
        })
        .await
        .expect("the stream ends within 10 s");
    }

    /// A last `revoked` event with this problem code, then the end.
    async fn revoked(&mut self, code: &str) {
        let sse = self.next().await;
        assert_eq!(sse.event, "revoked", "{sse:?}");
        let p: Value = serde_json::from_str(&sse.data).unwrap();
        assert_eq!(p["code"], code, "{p}");
        self.ends().await;
    }
}

fn ids(sse: &Sse) -> Vec<String> {
    assert_eq!(sse.event, "items", "{sse:?}");
    let v: Value = serde_json::from_str(&sse.data).unwrap();
    assert_eq!(Some(v["next_cursor"].as_str().unwrap()), sse.id.as_deref(), "the event id is the cursor");
    v["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect()
}

/// Uploads a photo and waits for its rendition job to end (the test's
/// workers end it), so that an approval places it at once.
async fn photo(guest: &Guest<'_>, n: u8) -> Uuid {
    let id = upload_as(guest, "image/png", &format!("p{n}.png"), &[n; 40]).await.id;
    settled(guest.server, id).await;
    id
}

#[tokio::test]
async fn an_approved_photo_reaches_a_listening_wall_within_a_second() {
    let (server, _workers) = TestServer::start_rendering().await;
    let event = server.create_event("live-party", 1_000_000, &["image/*"], "required").await;
    let guest = server.guest_of(&event).await;
    let first = photo(&guest, 1).await;
    let mut wall = Listening::open(&guest, None).await;

    let approved_at = Instant::now();
    moderate(&guest, first, "approve").await;
    let sse = wall.next().await;
    let elapsed = approved_at.elapsed();
    assert_eq!(ids(&sse), vec![first.to_string()]);
    assert!(elapsed < Duration::from_secs(1), "reached the wall after {elapsed:?}");
    let cursor = sse.id.clone().unwrap();

    // A take-down is streamed as well.
    moderate(&guest, first, "reject").await;
    let sse = wall.next().await;
    assert_eq!(sse.event, "removed");
    assert_eq!(serde_json::from_str::<Value>(&sse.data).unwrap()["id"], first.to_string());

    // A wall that comes back with its last event's id gets what it missed,
    // and nothing it had.
    drop(wall);
    let second = photo(&guest, 2).await;
    moderate(&guest, second, "approve").await;
    let mut wall = Listening::open(&guest, Some(&cursor)).await;
    assert_eq!(ids(&wall.next().await), vec![second.to_string()]);
    let third = photo(&guest, 3).await;
    moderate(&guest, third, "approve").await;
    assert_eq!(ids(&wall.next().await), vec![third.to_string()]);
}

#[tokio::test]
async fn an_approval_on_another_instance_reaches_the_wall_within_a_second() {
    let (server, _workers) = TestServer::start_rendering().await;
    let other =
        TestServer::start_with(Options { database_url: server.database_url.clone(), ..Options::default() }).await;
    let event = server.create_event("two-servers", 1_000_000, &["image/*"], "required").await;
    let guest = server.guest_of(&event).await;
    let id = photo(&guest, 4).await;
    let mut wall = Listening::open(&guest, None).await;
    let on_other = Guest { server: &other, event: event.clone(), session: guest.session.clone() };
    let approved_at = Instant::now();
    moderate(&on_other, id, "approve").await;
    assert_eq!(ids(&wall.next().await), vec![id.to_string()]);
    let elapsed = approved_at.elapsed();
    assert!(elapsed < Duration::from_secs(1), "reached the wall after {elapsed:?}");
}

#[tokio::test]
async fn the_live_wall_takes_the_walls_credentials() {
    let server = TestServer::start().await;
    let event = server.create_event("closed-party", 1_000_000, &["image/*"], "required").await;
    let path = format!("/v1/events/{}/wall/live", event.event.slug);
    let r = server.http.get(server.url(&path)).send().await.unwrap();
    assert_eq!(problem(r).await.1["code"], "unauthorized");
    let r = server.http.get(server.url(&format!("{path}?code=wrong"))).send().await.unwrap();
    assert_eq!(problem(r).await.1["code"], "wrong_guest_code");
    let r = server.http.get(server.url(&path)).bearer_auth(&event.wall_token).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r =
        server.http.get(server.url(&format!("{path}?after=nonsense&code={}", event.guest_code))).send().await.unwrap();
    assert_eq!(problem(r).await.1["code"], "invalid_query");
}

/// The host rotates one credential (`POST /v1/events/{slug}/rotate`) on
/// `server`: the answer.
async fn rotate(server: &TestServer, slug: &str, host_token: &str, what: &str) -> Value {
    let path = format!("/v1/events/{slug}/rotate");
    let r = server.call(reqwest::Method::POST, &path, Some(host_token), Some(serde_json::json!({"what": what}))).await;
    assert_eq!(r.status(), StatusCode::OK, "rotate {what}");
    r.json().await.unwrap()
}

/// A rotated credential or a deleted event ends the streams it no longer
/// opens (a last `revoked` event, then the end), and only those: a wall
/// whose credential still holds goes on receiving.
#[tokio::test]
async fn a_rotation_or_a_deletion_ends_the_walls_it_no_longer_opens() {
    let (server, _workers) = TestServer::start_rendering().await;
    let event = server.create_event("rotating-party", 1_000_000, &["image/*"], "required").await;
    let slug = event.event.slug.clone();
    let guest = server.guest_of(&event).await;
    let mut by_code = Listening::open(&guest, None).await;
    let mut by_token = Listening::open_with_token(&server, &slug, &event.wall_token).await;
    let mut by_host = Listening::open_with_token(&server, &slug, &event.host_token).await;

    // The wall token: its wall ends; the others go on.
    rotate(&server, &slug, &event.host_token, "wall_token").await;
    by_token.revoked("forbidden").await;
    let id = photo(&guest, 5).await;
    moderate(&guest, id, "approve").await;
    assert_eq!(ids(&by_code.next().await), vec![id.to_string()]);
    assert_eq!(ids(&by_host.next().await), vec![id.to_string()]);
    let r = server.http.get(server.url(&format!("/v1/events/{slug}/wall/live"))).bearer_auth(&event.wall_token);
    assert_eq!(problem(r.send().await.unwrap()).await.1["code"], "forbidden", "the reconnection is refused too");

    // The guest code: the wall opened with it ends.
    let code = rotate(&server, &slug, &event.host_token, "guest_code").await["guest_code"].as_str().unwrap().to_owned();
    by_code.revoked("wrong_guest_code").await;
    let mut with_new_code = event.clone();
    with_new_code.guest_code = code;
    let fresh = Guest { server: &server, event: with_new_code, session: guest.session.clone() };
    let mut by_new_code = Listening::open(&fresh, None).await;
    assert_eq!(ids(&by_new_code.next().await), vec![id.to_string()], "the new code opens the wall");

    // Deleting the event ends every wall.
    let r = server.call(reqwest::Method::DELETE, &format!("/v1/events/{slug}"), Some(&event.host_token), None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    by_host.revoked("not_found").await;
    by_new_code.revoked("not_found").await;
}

/// A rotation on another instance ends the walls streaming from this one
/// (within the watcher's credential check, 5 s).
#[tokio::test]
async fn a_rotation_on_another_instance_ends_the_walls_it_no_longer_opens() {
    let server = TestServer::start().await;
    let other =
        TestServer::start_with(Options { database_url: server.database_url.clone(), ..Options::default() }).await;
    let event = server.create_event("rotated-elsewhere", 1_000_000, &["image/*"], "required").await;
    let slug = event.event.slug.clone();
    let mut wall = Listening::open_with_token(&server, &slug, &event.wall_token).await;
    rotate(&other, &slug, &event.host_token, "wall_token").await;
    wall.revoked("forbidden").await;
}
