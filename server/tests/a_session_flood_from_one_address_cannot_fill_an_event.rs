//! Hostile guest: a flood of guest sessions from one address. One client
//! address may open only its share of an event's hourly sessions
//! (`--max-sessions-per-client-per-event-per-hour`), so the rest stay for
//! the event's other guests; and a session that authorized nothing stops
//! counting after 10 minutes, so empty sessions cannot keep the event shut.
//! Sessions that uploaded keep counting for the hour.

use crate::support;

use reqwest::Client;
use support::limits::{client_from, join_from, with_limits};
use support::{Guest, TestServer};
use upload_once_core::wire::CreateEventResponse;
use uuid::Uuid;

const PER_EVENT: u64 = 8;
const PER_CLIENT: u64 = 4;

async fn join(server: &TestServer, client: &Client, event: &CreateEventResponse) -> Result<String, String> {
    join_from(server, client, event).await.map(|guest| guest.session)
}

#[tokio::test]
async fn one_address_opens_only_its_share_and_empty_sessions_stop_counting() {
    let server = TestServer::start_with(with_limits(|l| {
        l.max_sessions_per_event_per_hour = PER_EVENT;
        l.max_sessions_per_client_per_event_per_hour = PER_CLIENT;
    }))
    .await;
    let event = server.create_event("flooded", 1_000_000, &["image/*"], "none").await;
    let hostile = client_from("127.0.0.2");
    for _ in 0..PER_CLIENT {
        join(&server, &hostile, &event).await.unwrap();
    }
    assert_eq!(join(&server, &hostile, &event).await, Err("403 too_many_sessions".into()), "past its share");

    // The other guests of the event still get in, up to the event's cap.
    let mut honest = Vec::new();
    for n in 0..(PER_EVENT - PER_CLIENT) {
        let session = join(&server, &client_from(&format!("127.0.1.{}", n + 1)), &event).await.unwrap();
        honest.push(session);
    }
    assert_eq!(
        join(&server, &client_from("127.0.2.1"), &event).await,
        Err("403 too_many_sessions".into()),
        "the event's cap"
    );
    // One of them uploads something.
    let uploader = Guest { server: &server, event: event.clone(), session: honest[0].clone() };
    uploader.authorize(Uuid::new_v4(), 10).await;

    // Ten minutes on, the sessions that authorized nothing no longer
    // count: the hostile address has its share again, and the one that
    // uploaded still counts.
    server.clock.advance(10 * 60 * 1000 + 1000);
    for _ in 0..PER_CLIENT {
        join(&server, &hostile, &event).await.unwrap();
    }
    assert_eq!(join(&server, &hostile, &event).await, Err("403 too_many_sessions".into()));
    for n in 0..(PER_EVENT - PER_CLIENT - 1) {
        join(&server, &client_from(&format!("127.0.3.{}", n + 1)), &event).await.unwrap();
    }
    assert_eq!(
        join(&server, &client_from("127.0.4.1"), &event).await,
        Err("403 too_many_sessions".into()),
        "the session that uploaded still counts"
    );
}
