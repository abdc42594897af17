//! "Approve all waiting" at a festival's size (issue 48): one request,
//! which the server carries out in batches with progress, deciding only
//! what the host had seen; an instance that stops mid-way leaves the rest
//! to the next instance's sweep, and nothing is decided twice.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{Guest, Options, TestServer, fresh_database_url};
use upload_once_core::wire::ModerationDecision;
use upload_once_server::services::bulk;
use uuid::Uuid;

/// More than one batch.
const WAITING: usize = bulk::BATCH as usize + 50;

/// Uploads `n` photos, each of other bytes, a few at a time.
async fn upload_many(guest: &Guest<'_>, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(25) {
        futures_util::future::join_all(chunk.iter().map(|_| guest.upload(Uuid::new_v4().as_bytes().to_vec()))).await;
    }
}

/// The host list's first page (its counts and change cursor).
async fn first_page(server: &TestServer, guest: &Guest<'_>) -> Value {
    let path = format!("/v1/events/{}/media?limit=1", guest.slug());
    let r = server.call(Method::GET, &path, Some(&guest.event.host_token), None).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// Reads a bulk decision's progress until it is done (a bound on a hang,
/// not a measure of speed); every progress read.
async fn until_done(server: &TestServer, guest: &Guest<'_>, id: &str) -> Vec<Value> {
    let path = format!("/v1/events/{}/moderation/bulk/{id}", guest.slug());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut reads = Vec::new();
    loop {
        let r = server.call(Method::GET, &path, Some(&guest.event.host_token), None).await;
        assert_eq!(r.status(), StatusCode::OK);
        let progress: Value = r.json().await.unwrap();
        reads.push(progress.clone());
        if progress["state"] == "done" {
            return reads;
        }
        assert!(tokio::time::Instant::now() < deadline, "the bulk decision never ended: {progress}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_request_approves_everything_the_host_saw_waiting() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = server.guest().await;
    upload_many(&guest, WAITING).await;
    let seen = first_page(&server, &guest).await;
    assert_eq!(seen["counts"]["pending"], WAITING);
    // Their previews are made after the host looked (a change each): the
    // host saw them waiting all the same.
    let path = format!("/v1/events/{}/media?limit=500", guest.slug());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let r = server.call(Method::GET, &path, Some(&guest.event.host_token), None).await;
        let page: Value = r.json().await.unwrap();
        if page["media"].as_array().unwrap().iter().all(|m| m["preview"] != "pending") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the previews were never made");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // A photo arrives after the host's last read: it waits for the host.
    let (_, late) = guest.upload(b"arrived after the host looked".to_vec()).await;

    let path = format!("/v1/events/{}/moderation/bulk", guest.slug());
    let body = json!({"decision": "approve", "upto": seen["changes"]});
    let r = server.call(Method::POST, &path, Some(&guest.event.host_token), Some(body)).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let begun: Value = r.json().await.unwrap();
    assert_eq!(begun["total"], WAITING);
    let reads = until_done(&server, &guest, begun["id"].as_str().unwrap()).await;
    let last = reads.last().unwrap();
    assert_eq!((last["total"].clone(), last["done"].clone()), (json!(WAITING), json!(WAITING)));
    for pair in reads.windows(2) {
        assert!(pair[0]["done"].as_u64() <= pair[1]["done"].as_u64(), "progress only grows: {reads:?}");
    }

    let after = first_page(&server, &guest).await;
    assert_eq!(after["counts"], json!({"pending": 1, "approved": WAITING, "rejected": 0, "all": WAITING + 1}));
    let late = server.state.records.media(late.id).await.unwrap().unwrap();
    assert_eq!(late.moderation, upload_once_core::wire::Moderation::Pending, "the late photo waits for the host");

    // Bad input: an unknown decision, a cursor of another event.
    let other = server.guest().await;
    let foreign = first_page(&server, &other).await["changes"].clone();
    for body in [json!({"decision": "maybe"}), json!({"decision": "approve", "upto": foreign})] {
        let r = server.call(Method::POST, &path, Some(&guest.event.host_token), Some(body.clone())).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    let r = server.call(Method::POST, &path, Some(&guest.session), Some(json!({"decision": "approve"}))).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "a guest cannot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_that_stops_mid_way_leaves_the_rest_to_the_next() {
    // The database outlives the first instance.
    let dir = tempfile::tempdir().unwrap();
    let database_url = fresh_database_url(dir.path()).await;
    let options = || Options { database_url: Some(database_url.clone()), ..Options::default() };
    let first = TestServer::start_with(options()).await;
    let guest = first.guest().await;
    upload_many(&guest, WAITING).await;
    let event_id = first.state.records.event_by_slug(guest.slug()).await.unwrap().unwrap().id;
    let seq = first.state.records.change_seq(event_id).await.unwrap();

    // As the POST does, then one batch, and the instance stops.
    let now = first.state.now();
    let begun = first
        .state
        .records
        .start_bulk(event_id, ModerationDecision::Approve, seq, now, now + bulk::CLAIM_MS)
        .await
        .unwrap();
    assert!(!bulk::run_batch(&first.state, &begun).await.unwrap(), "one batch of several");
    let (event, session) = (guest.event.clone(), guest.session.clone());
    drop(guest);
    drop(first);

    let second = TestServer::start_with(options()).await;
    let halfway = second.state.records.bulk(event_id, begun.id).await.unwrap().unwrap();
    assert_eq!((halfway.done, halfway.finished), (u64::from(bulk::BATCH), false));
    // Within the claim, no other instance takes it.
    second.clock.set(now + 1_000);
    second.sweep().await;
    let held = second.state.records.bulk(event_id, begun.id).await.unwrap().unwrap();
    assert_eq!(held.done, u64::from(bulk::BATCH), "the claim holds it");
    // Past the claim, the next sweep takes it up.
    second.clock.set(now + 2 * bulk::CLAIM_MS);
    second.sweep().await;
    let guest = Guest { server: &second, event, session };
    let reads = until_done(&second, &guest, &begun.id.to_string()).await;
    assert_eq!(reads.last().unwrap()["done"], WAITING);
    let page = first_page(&second, &guest).await;
    assert_eq!(page["counts"], json!({"pending": 0, "approved": WAITING, "rejected": 0, "all": WAITING}));
    // Each placed on the wall once (a decision made twice would not move
    // it, but would count twice above).
    let rows = second.state.records.list_media(event_id, None).await.unwrap();
    let mut decided: Vec<_> = rows.iter().map(|m| m.moderated_at.is_some()).collect();
    decided.dedup();
    assert_eq!(decided, vec![true]);
}
