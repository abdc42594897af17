//! Renditions are made off the request path by workers claiming jobs from
//! a table: a server that dies while a worker holds a job leaves it
//! `running`, and the next server takes it up once its lease has run out
//! and finishes it.

use crate::support;

use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use support::media::{open_event, quadrants, upload_as, with_exif};
use support::{Gate, GatedObjects, Options, TestServer};
use tokio::sync::{Notify, Semaphore};
use upload_once_server::media::jobs::JobState;
use upload_once_server::storage::ObjectStore;
use upload_once_server::storage::intercept::Intercepted;

#[tokio::test]
async fn a_job_left_running_by_a_dead_server_is_finished_by_the_next_one() {
    let entered = Arc::new(Notify::new());
    let store: Arc<Mutex<Option<Arc<dyn ObjectStore>>>> = Arc::default();
    let first = TestServer::start_with(Options {
        wrap_objects: Some(Box::new({
            let (entered, store) = (entered.clone(), store.clone());
            move |inner| {
                *store.lock().unwrap() = Some(inner.clone());
                // Reads of whole objects never end: a worker reading an
                // original stops there, as if the server died.
                let never = Arc::new(Semaphore::new(0));
                Arc::new(Intercepted::new(inner, GatedObjects { entered, release: never, gate: Gate::Gets }))
            }
        })),
        ..Options::default()
    })
    .await;
    let guest = open_event(&first).await;
    let media = upload_as(&guest, "image/jpeg", "IMG_0003.JPG", &with_exif(quadrants(64, 32), 6)).await;

    let mut workers = upload_once_server::services::renditions::spawn(&first.state);
    entered.notified().await;
    let job = first.state.media.db.job(media.id).await.unwrap().unwrap();
    assert_eq!((job.state, job.tries), (JobState::Running, 1), "the worker holds the job");
    // The server dies with the job in its hands.
    workers.abort();

    // The next server, on the same records and the same objects.
    let store = store.lock().unwrap().clone().unwrap();
    let next = TestServer::start_with(Options {
        database_url: first.database_url.clone(),
        wrap_objects: Some(Box::new(move |_| store)),
        ..Options::default()
    })
    .await;
    let _workers = upload_once_server::services::renditions::spawn(&next.state);
    // The dead worker's lease still holds: the job is not taken yet.
    let claim = next.state.media.db.claim(next.state.now(), next.state.media.settings.lease).await.unwrap();
    assert_eq!(claim, None, "a job under a live lease is nobody else's");
    next.clock.advance(next.state.media.settings.lease.as_millis() as i64 + 1_000);

    // Asking for the rendition waits for the job, now finished.
    let event_id = next.state.records.media(media.id).await.unwrap().unwrap().event_id;
    let r = next.http.get(next.state.links.media_url(event_id, media.id)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/jpeg");
    let shown = image::load_from_memory(&r.bytes().await.unwrap()).unwrap();
    assert_eq!((shown.width(), shown.height()), (32, 64), "upright");
    let job = next.state.media.db.job(media.id).await.unwrap().unwrap();
    assert_eq!((job.state, job.tries), (JobState::Done, 2), "finished by the second claim");
}
