//! The sweeper aborts the multipart uploads of expired and rejected
//! attempts, so no part is left behind: not the parts already stored, not
//! a part whose PUT was still arriving during the abort (it is refused),
//! not a part sent later. One upload the store will not abort does not hold
//! up the others.
//!
//! "Left behind" is asked of the store itself: the embedded store's
//! `objects/.parts/` directory, S3's `ListParts` (`NoSuchUpload`).

use crate::support;

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use serde_json::json;
use support::multipart::{FILE, MultipartFaults, part};
use support::{Options, TestServer, until};
use upload_once_server::services::sweeper::sweep_once;

const HOUR: i64 = 3_600_000;

fn hour_long() -> Options {
    Options {
        attempt_ttl: Some(Duration::from_secs(3600)),
        url_ttl: Some(Duration::from_secs(600)),
        ..support::multipart::options()
    }
}

/// Asserts the store holds no upload for `key` any more, and the embedded
/// store no upload at all.
async fn nothing_left(server: &TestServer, key: &str, upload_id: &str) {
    assert!(!server.upload_is_open(key, upload_id).await, "the upload is gone from the store");
    assert_eq!(server.open_local_uploads().await, Vec::<String>::new(), "no upload directory left");
    assert_eq!(server.temp_files(), Vec::<String>::new(), "no received bytes left");
}

#[tokio::test]
async fn the_sweeper_aborts_the_upload_of_an_expired_attempt_and_a_later_part_is_refused() {
    let server = TestServer::start_with(hour_long()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(30).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2]).await;
    // A URL for the last part, signed as late as it can be.
    server.clock.advance(HOUR - 60_000);
    let late = guest.sign(id, &bytes, &plan, &[3]).await.remove(0);
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    assert_eq!(server.listed_parts(&authorized.object_key, &upload_id).await, vec![1, 2]);

    server.clock.advance(60_001);
    let report = sweep_once(&server.state).await.unwrap();
    assert_eq!((report.expired, report.objects_deleted), (1, 1), "expired, and its upload aborted");
    nothing_left(&server, &authorized.object_key, &upload_id).await;
    assert_eq!(guest.status_of(id).await["state"], "expired");

    // The late part: refused by the embedded store (its URL ends with the
    // attempt), by S3 because the upload is gone.
    if support::is_s3() {
        let refused =
            support::multipart::refused_by_s3(&server, &late.upload.url, &late.upload, part(&bytes, &plan, 3)).await;
        if let Some((status, code)) = refused {
            if !support::store_lacks("the late part", support::StoreCheck::NoSuchUploadForParts) {
                assert_eq!((status, code.as_str()), (StatusCode::NOT_FOUND, "NoSuchUpload"));
            }
        }
    } else {
        let (status, body) = support::problem(server.put(&late.upload, part(&bytes, &plan, 3)).await).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::FORBIDDEN, Some("url_expired")));
    }
    nothing_left(&server, &authorized.object_key, &upload_id).await;
    assert_eq!(server.stored_keys().await, Vec::<String>::new());

    // Nothing more to do on the next pass.
    let report = sweep_once(&server.state).await.unwrap();
    assert_eq!((report.expired, report.objects_deleted), (0, 0));
}

/// A part's PUT that is still arriving when the sweeper aborts its upload
/// (here: the attempt was rejected at confirm, so the part's URL still
/// holds) is refused when its last byte arrives, and leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_part_arriving_during_the_abort_is_refused_and_leaves_nothing() {
    let server = TestServer::start_with(hour_long()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(31).await;
    guest.send_parts(id, &bytes, &plan, &[1, 3]).await;
    let second = guest.sign(id, &bytes, &plan, &[2]).await.remove(0);
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();

    // Part 2 starts: its first MiB is sent, the rest held back.
    let body = part(&bytes, &plan, 2);
    let (tx, put) = support::multipart::held_back_put(&server, &second.upload, &body, 1 << 20).await;
    if server.state.local_store.as_deref().is_some() {
        // The embedded store has taken the request: its bytes are arriving.
        until("the part's bytes to arrive", Duration::from_secs(30), || !server.temp_files().is_empty()).await;
    }

    // Meanwhile the attempt is rejected and swept.
    let r = guest.confirm_raw(id, json!({"size": FILE - 1, "content_type": "video/mp4"})).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let report = sweep_once(&server.state).await.unwrap();
    assert_eq!(report.objects_deleted, 1, "the rejected attempt's upload was aborted");
    assert!(!server.upload_is_open(&authorized.object_key, &upload_id).await);

    // (If S3 already refused the request, the channel is closed.)
    let _ = tx.send(Ok(Bytes::copy_from_slice(&body[1 << 20..]))).await;
    drop(tx);
    let answer = put.await.unwrap();
    if support::is_s3() {
        // S3 refuses it when its last byte came, or, had the request only
        // started after the abort, by closing the connection at once.
        match answer {
            Ok(r) => {
                let (status, code) = support::s3_error(r).await;
                if !support::store_lacks("the part in flight", support::StoreCheck::NoSuchUploadForParts) {
                    assert_eq!((status, code.as_str()), (StatusCode::NOT_FOUND, "NoSuchUpload"));
                }
            }
            Err(e) => assert!(e.is_request(), "{e}"),
        }
    } else {
        let r = answer.expect("an answer");
        let (status, body) = support::problem(r).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::GONE, Some("expired")), "{body}");
    }
    nothing_left(&server, &authorized.object_key, &upload_id).await;
}

#[tokio::test]
async fn an_upload_the_store_will_not_abort_does_not_hold_up_the_others() {
    let faults = Arc::new(OnceLock::new());
    let server = TestServer::start_with(Options {
        wrap_objects: MultipartFaults::options(faults.clone()).wrap_objects,
        ..hour_long()
    })
    .await;
    let faults = faults.get().unwrap().clone();
    let guest = server.big_guest().await;
    let mut attempts = Vec::new();
    for seed in [32, 33] {
        let (id, bytes, authorized, plan) = guest.authorize_file(seed).await;
        guest.send_parts(id, &bytes, &plan, &[1]).await;
        let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
        attempts.push((authorized.object_key, upload_id));
    }
    let [(stuck_key, stuck), (key, upload_id)] = attempts.try_into().unwrap();
    *faults.refuse_abort.lock().unwrap() = Some(stuck.clone());

    server.clock.advance(HOUR + 1);
    let report = sweep_once(&server.state).await.unwrap();
    assert_eq!((report.expired, report.objects_deleted), (2, 1), "both expired, one upload aborted");
    assert_eq!(report.objects_refused, 1, "the sweep reports the upload the store refused to abort");
    assert!(!server.upload_is_open(&key, &upload_id).await, "the other upload was aborted");
    assert!(server.upload_is_open(&stuck_key, &stuck).await, "the refused one is still there");
    let backlog = server.state.records.sweep_backlog(server.state.now()).await.unwrap();
    assert_eq!(backlog.dead_objects, 1, "and still to do");

    *faults.refuse_abort.lock().unwrap() = None;
    let report = sweep_once(&server.state).await.unwrap();
    assert_eq!(report.objects_deleted, 1, "aborted on the next pass");
    assert_eq!(report.objects_refused, 0);
    assert!(!server.upload_is_open(&stuck_key, &stuck).await);
    assert_eq!(server.open_local_uploads().await, Vec::<String>::new());
    assert_eq!(server.state.records.sweep_backlog(server.state.now()).await.unwrap().dead_objects, 0);
    assert!(faults.creates.load(Ordering::SeqCst) == 2);
}

/// An upload already gone from the store (a lifecycle rule, or an abort
/// whose record was lost) is no obstacle.
#[tokio::test]
async fn an_upload_already_gone_counts_as_aborted() {
    let server = TestServer::start_with(hour_long()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(34).await;
    guest.send_parts(id, &bytes, &plan, &[2]).await;
    let upload_id = server.upload_id(&authorized.object_key).await.unwrap();
    server.state.objects.abort_multipart(&authorized.object_key, &upload_id).await.unwrap();
    assert!(!server.upload_is_open(&authorized.object_key, &upload_id).await);

    // Status of the live attempt: its upload holds nothing.
    assert_eq!(guest.status_of(id).await["parts"], json!([]));
    server.clock.advance(HOUR + 1);
    let report = sweep_once(&server.state).await.unwrap();
    assert_eq!((report.expired, report.objects_deleted), (1, 1));
    assert_eq!(server.state.records.sweep_backlog(server.state.now()).await.unwrap().dead_objects, 0);
}
