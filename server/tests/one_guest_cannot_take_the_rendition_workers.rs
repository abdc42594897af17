//! Hostile guest: one session uploads photos whose decoding costs the most
//! the pixel cap allows. Past its rendition budget (pixels decoded per
//! hour, `--render-megapixels-per-session`) its further photos wait their
//! turn in the queue, without being counted as a failed try, while an
//! honest guest of another event has theirs made at once. An hour later the
//! waiting photos are made too: deferred, never dropped. And one session
//! takes one rendition worker at most: a worker takes no job of a session
//! another worker holds one of.

use std::time::Duration;

use crate::support;

use image::ImageFormat;
use support::media::{encoded, open_event, quadrants, upload_as};
use support::{Options, TestServer};
use upload_once_server::media::jobs::{JobRow, JobState};
use uuid::Uuid;

async fn jobs_of(server: &TestServer, ids: &[Uuid]) -> Vec<JobRow> {
    let mut rows = server.state.media.db.jobs(ids).await.unwrap();
    rows.sort_by_key(|j| ids.iter().position(|id| *id == j.media_id));
    rows
}

async fn until(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !ok().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn past_its_budget_a_sessions_photos_wait_while_another_guests_are_made() {
    let server = TestServer::start_with(Options {
        // One photo of 1 MP per hour. One worker: with more, each may begin
        // one decode of the same session at the same moment (the budget is
        // kept to within a photo per worker).
        configure: Some(Box::new(|c| {
            c.render_megapixels_per_session = 1;
            c.rendition_workers = 1;
        })),
        ..Options::default()
    })
    .await;
    let _workers = upload_once_server::services::renditions::spawn(&server.state);
    let hostile = open_event(&server).await;
    let honest = open_event(&server).await;

    let mut ids = Vec::new();
    for n in 0..3u32 {
        let photo = encoded(quadrants(1000, 1000 - n), ImageFormat::Png);
        ids.push(upload_as(&hostile, "image/png", &format!("p{n}.png"), &photo).await.id);
    }
    // One is made; the other two were read, found over the budget and put
    // back in the queue without a decode.
    until("one photo made and two waiting", async || {
        let rows = jobs_of(&server, &ids).await;
        rows.iter().filter(|j| j.state == JobState::Done).count() == 1
            && rows
                .iter()
                .filter(|j| j.state == JobState::Queued && j.pixels.is_some() && j.decoded_at.is_none())
                .count()
                == 2
    })
    .await;

    let photo =
        upload_as(&honest, "image/jpeg", "IMG_0001.JPG", &encoded(quadrants(1200, 900), ImageFormat::Jpeg)).await;
    until("the honest guest's photo to be made", async || {
        jobs_of(&server, &[photo.id]).await.first().is_some_and(|j| j.state == JobState::Done)
    })
    .await;
    let rows = jobs_of(&server, &ids).await;
    assert_eq!(rows.iter().filter(|j| j.state == JobState::Queued).count(), 2, "still waiting: {rows:?}");
    assert!(rows.iter().all(|j| j.tries <= 1), "waiting is not a failed try: {rows:?}");

    // An hour on, the budget has room again: the waiting photos are made.
    server.clock.advance(3_700_000);
    server.state.media.events.wake();
    until("the waiting photos to be made, one budget at a time", async || {
        let rows = jobs_of(&server, &ids).await;
        if rows.iter().filter(|j| j.state == JobState::Done).count() == 2 {
            server.clock.advance(3_700_000);
            server.state.media.events.wake();
        }
        rows.iter().all(|j| j.state == JobState::Done)
    })
    .await;
}

#[tokio::test]
async fn a_sessions_photos_take_one_worker_at_a_time() {
    // No workers running: the test claims as they would.
    let server = TestServer::start().await;
    let hostile = open_event(&server).await;
    let honest = open_event(&server).await;
    let photo = |n: u32| encoded(quadrants(64 + n, 48), ImageFormat::Png);
    let first = upload_as(&hostile, "image/png", "a.png", &photo(0)).await;
    let second = upload_as(&hostile, "image/png", "b.png", &photo(1)).await;
    let other = upload_as(&honest, "image/png", "c.png", &photo(2)).await;
    let db = &server.state.media.db;
    let now = server.state.now();
    for id in [first.id, second.id, other.id] {
        db.enqueue(id, now).await.unwrap();
    }
    let lease = Duration::from_secs(30);
    // The hostile session's first photo, then the honest guest's, not the
    // hostile session's second while its first is held.
    let a = db.claim(now, lease).await.unwrap().expect("a job");
    assert_eq!(a.media_id, first.id);
    let b = db.claim(now, lease).await.unwrap().expect("another job");
    assert_eq!(b.media_id, other.id, "another session's photo, not the same session's second");
    assert_eq!(db.claim(now, lease).await.unwrap(), None, "its session's worker is busy");
    // Once the first ends, the second is next.
    db.finish(a, &Ok(upload_once_server::media::jobs::Made { width: 64, height: 48, duration_ms: None }), now)
        .await
        .unwrap();
    assert_eq!(db.claim(now, lease).await.unwrap().map(|c| c.media_id), Some(second.id));
}
