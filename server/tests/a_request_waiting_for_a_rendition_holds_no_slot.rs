//! Hostile guest: many requests for renditions still being made (a flood of
//! thumbnails of fresh uploads). Each waits for its job, but holds no slot
//! of `--max-requests-in-flight` while it waits: the API goes on answering
//! other guests.

use std::time::Duration;

use crate::support;

use support::TestServer;
use support::limits::with_limits;
use support::media::{open_event, upload_as};

const SLOTS: u64 = 2;
const WAITING: u64 = 6;

#[tokio::test]
async fn requests_waiting_for_renditions_leave_the_api_to_other_guests() {
    // No rendition workers: every job stays queued, every request waits.
    let server = TestServer::start_with(with_limits(|l| l.max_requests_in_flight = SLOTS)).await;
    let hostile = open_event(&server).await;
    let photo = upload_as(&hostile, "image/png", "p.png", &[9; 64]).await;
    // Not on the wall (its renditions are never made): its thumbnail's
    // link, as the wall would give it.
    let row = server.state.records.media(photo.id).await.unwrap().unwrap();
    let thumb = server.state.links.wall_item(&row).thumb_url;

    let mut waiting = Vec::new();
    for n in 1..=WAITING {
        let (http, url) = (server.http.clone(), thumb.clone());
        waiting.push(tokio::spawn(async move { http.get(url).send().await.map(|r| r.status()) }));
        // Each is at the server, waiting, before the next is sent.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while server.state.ops.waiting_for_jobs() < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "request {n} never waited (answered: {:?})",
                waiting.last()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    assert!(server.state.ops.requests_in_flight() >= WAITING, "all of them are at the server");
    // More requests wait than the server has slots, and another guest still
    // gets through.
    server.another_event_still_uploads().await;
    for task in waiting {
        task.abort();
    }
}
