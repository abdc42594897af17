//! The wall and other guests only ever get renditions: an approved media
//! goes onto the wall (the paged wall and the live feed alike) once its
//! rendition job has ended, not before; whichever of the approval and the
//! job's end comes last places it; and a job whose end was written by an
//! instance that died before placing it is placed by the next scanner.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use support::media::{moderate, open_event, quadrants, upload_as, wall, with_exif};
use support::{Gate, GatedObjects, Guest, Options, TestServer};
use tokio::sync::{Notify, Semaphore};
use upload_once_core::wire::Moderation;
use upload_once_server::media::jobs::{JobState, Made};
use upload_once_server::services::renditions;
use upload_once_server::storage::intercept::Intercepted;
use uuid::Uuid;

/// A test server whose rendition workers stop at the original's read until
/// `open` has a permit.
async fn gated_server(entered: &Arc<Notify>, open: &Arc<Semaphore>) -> TestServer {
    let (entered, open) = (entered.clone(), open.clone());
    TestServer::start_with(Options {
        wrap_objects: Some(Box::new(move |inner| {
            Arc::new(Intercepted::new(inner, GatedObjects { entered, release: open, gate: Gate::Gets }))
        })),
        ..Options::default()
    })
    .await
}

fn wall_ids(page: &Value) -> Vec<String> {
    page["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect()
}

/// Reads the wall until it holds `id` (a bound on a hang, not a measure).
async fn wall_shows(guest: &Guest<'_>, id: Uuid) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let page = wall(guest).await;
        if wall_ids(&page).contains(&id.to_string()) {
            return page;
        }
        assert!(tokio::time::Instant::now() < deadline, "the wall never showed {id}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn job_state(server: &TestServer, id: Uuid) -> Option<JobState> {
    server.state.media.db.job(id).await.unwrap().map(|j| j.state)
}

#[tokio::test]
async fn without_moderation_a_photo_reaches_the_wall_once_its_renditions_are_made() {
    let (entered, open) = (Arc::new(Notify::new()), Arc::new(Semaphore::new(0)));
    let server = gated_server(&entered, &open).await;
    let _workers = renditions::spawn(&server.state);
    let guest = open_event(&server).await;
    let photo = upload_as(&guest, "image/jpeg", "IMG_0001.JPG", &with_exif(quadrants(64, 32), 6)).await;
    assert_eq!(photo.moderation, Moderation::Approved, "approved as it is confirmed (moderation none)");

    // The worker is reading the original: the rendition is being made.
    entered.notified().await;
    assert_eq!(job_state(&server, photo.id).await, Some(JobState::Running));
    let page = wall(&guest).await;
    assert!(wall_ids(&page).is_empty(), "nothing on the wall before its renditions: {page}");

    open.add_permits(1_000);
    let page = wall_shows(&guest, photo.id).await;
    assert_eq!(job_state(&server, photo.id).await, Some(JobState::Done), "placed after the job ended");
    let item = &page["items"][0];
    assert!(item.get("placeholder").is_none_or(Value::is_null), "its rendition, not a placeholder: {item}");
    let r = server.http.get(item["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let shown = image::load_from_memory(&r.bytes().await.unwrap()).unwrap();
    assert_eq!((shown.width(), shown.height()), (32, 64), "the upright display rendition");
}

#[tokio::test]
async fn an_approval_before_the_renditions_waits_for_them_and_one_after_places_at_once() {
    let (entered, open) = (Arc::new(Notify::new()), Arc::new(Semaphore::new(0)));
    let server = gated_server(&entered, &open).await;
    let _workers = renditions::spawn(&server.state);
    let event = server.create_event("wall-waits", 1 << 20, &["image/*"], "required").await;
    let guest = server.guest_of(&event).await;
    let early =
        upload_as(&guest, "image/png", "early.png", &support::media::encoded(quadrants(8, 8), image::ImageFormat::Png))
            .await;
    entered.notified().await;

    // Approved while its job runs: approved, and not on the wall.
    let approved = moderate(&guest, early.id, "approve").await;
    assert_eq!(approved["moderation"], "approved");
    assert!(wall_ids(&wall(&guest).await).is_empty(), "approved, but its renditions are not made");

    // The job ends: its end places it.
    open.add_permits(1_000);
    wall_shows(&guest, early.id).await;

    // Approved after its job ended: on the wall at once, after the first.
    // (Other bytes: the same would be a duplicate of the first.)
    let late =
        upload_as(&guest, "image/png", "late.png", &support::media::encoded(quadrants(12, 8), image::ImageFormat::Png))
            .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !matches!(job_state(&server, late.id).await, Some(JobState::Done | JobState::Placeholder)) {
        assert!(tokio::time::Instant::now() < deadline, "the second job never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(wall_ids(&wall(&guest).await), vec![early.id.to_string()], "pending media is not on the wall");
    moderate(&guest, late.id, "approve").await;
    assert_eq!(
        wall_ids(&wall(&guest).await),
        vec![early.id.to_string(), late.id.to_string()],
        "placed by the approval"
    );
}

#[tokio::test]
async fn a_job_ended_by_an_instance_that_died_before_placing_it_is_placed_by_the_next_scanner() {
    let server = TestServer::start().await;
    let guest = open_event(&server).await;
    let photo =
        upload_as(&guest, "image/png", "p.png", &support::media::encoded(quadrants(8, 8), image::ImageFormat::Png))
            .await;

    // A worker of an instance ends the job and dies before placing it: the
    // job's end is written, the wall position is not.
    let job = server.state.media.db.claim(server.state.now(), Duration::from_secs(60)).await.unwrap().unwrap();
    assert_eq!(job.media_id, photo.id);
    let made = Made { width: 8, height: 8, duration_ms: None };
    assert!(server.state.media.db.finish(job, &Ok(made), server.state.now()).await.unwrap());
    assert!(wall_ids(&wall(&guest).await).is_empty(), "not placed by the job's end alone");

    // The next instance's scanner places it.
    let _workers = renditions::spawn(&server.state);
    wall_shows(&guest, photo.id).await;
}
