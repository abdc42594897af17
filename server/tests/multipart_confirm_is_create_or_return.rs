//! Confirming a multipart attempt is create-or-return like a single PUT's,
//! through its new ambiguous moments: the store completed the upload but
//! its answer was lost (the next confirm takes the assembled object, one
//! media record, and a part sent meanwhile is refused); confirms race (the
//! upload is completed once, one media record); a repeat after success
//! returns the same record, and the object never changes.

use crate::support;

use std::sync::atomic::Ordering;

use reqwest::StatusCode;
use support::multipart::{FILE, MultipartFaults, VIDEO, composite, part};
use support::{TestServer, problem};
use upload_once_core::wire::Media;

#[tokio::test]
async fn a_complete_whose_answer_was_lost_is_taken_by_the_next_confirm() {
    let (server, faults) = MultipartFaults::start().await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(20).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;
    // A second URL for part 2, as a client in doubt would ask for.
    let spare = guest.sign(id, &bytes, &plan, &[2]).await.remove(0);

    faults.lose_complete_answer.store(true, Ordering::SeqCst);
    let (status, body) = problem(guest.confirm_video(id, FILE).await).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::SERVICE_UNAVAILABLE, Some("object_store_unavailable")));
    assert_eq!(body["retryable"], true);
    assert!(!faults.lose_complete_answer.load(Ordering::SeqCst), "the fault happened");
    assert!(
        server.state.objects.head(&authorized.object_key).await.unwrap().is_some(),
        "the store did assemble the object"
    );
    assert_eq!(server.counts().await.1, 0, "but no media record was made");
    let status = guest.status_of(id).await;
    assert_eq!(status["object_stored"], true, "status says only the confirm is missing");
    assert_eq!(status.get("parts"), None, "no parts any more, only the object (a client goes straight to confirm)");
    // The upload is over: a part sent now is refused, and changes nothing.
    part_refused(&server, &spare.upload, part(&bytes, &plan, 2), StatusCode::GONE, "expired").await;

    let r = guest.confirm_video(id, FILE).await;
    assert_eq!(r.status(), StatusCode::OK);
    let media: Media = r.json().await.unwrap();
    assert_eq!(faults.completes.load(Ordering::SeqCst), 1, "the assembled object was taken, not completed again");
    assert_eq!(
        media.composite_sha256.as_deref(),
        Some(composite(&bytes, &plan).as_str()),
        "the checksum is still known"
    );
    assert_eq!(media.size, FILE);
    assert_eq!(server.counts().await.1, 1, "one media record");
    assert!(server.object_bytes(&authorized.object_key).await == bytes);

    let again: Media = guest.confirm_video(id, FILE).await.json().await.unwrap();
    assert_eq!(again, media, "a repeat returns the same record");
    assert_eq!(server.counts().await.1, 1);
    // A confirmed object never changes.
    part_refused(&server, &spare.upload, part(&bytes, &plan, 2), StatusCode::CONFLICT, "already_confirmed").await;
    assert!(server.object_bytes(&authorized.object_key).await == bytes);
}

/// A part PUT refused by the embedded store with `status` and `code`; by
/// S3 with `404 NoSuchUpload` (its upload is completed), or a closed
/// connection.
async fn part_refused(
    server: &TestServer,
    upload: &upload_once_core::wire::UploadInstruction,
    body: Vec<u8>,
    status: StatusCode,
    code: &str,
) {
    if support::is_s3() {
        if let Some(refusal) = support::multipart::refused_by_s3(server, &upload.url, upload, body).await {
            if !support::store_lacks("a part for a completed upload", support::StoreCheck::NoSuchUploadForParts) {
                assert_eq!(refusal, (StatusCode::NOT_FOUND, "NoSuchUpload".to_owned()));
            }
        }
    } else {
        let (s, p) = problem(server.put(upload, body).await).await;
        assert_eq!((s, p["code"].as_str()), (status, Some(code)), "{p}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_confirms_complete_the_upload_once_and_make_one_media_record() {
    let (server, faults) = MultipartFaults::start().await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(21).await;
    guest.send_parts(id, &bytes, &plan, &[1, 2, 3]).await;

    let claim = serde_json::json!({"size": FILE, "content_type": VIDEO, "composite_sha256": composite(&bytes, &plan)});
    let answers = guest.confirm_concurrently(id, claim, 8).await;
    let ids: std::collections::BTreeSet<String> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, StatusCode::OK, "{body}");
            let media: Media = serde_json::from_str(body).unwrap();
            assert_eq!(media.composite_sha256.as_deref(), Some(composite(&bytes, &plan).as_str()));
            media.id.to_string()
        })
        .collect();
    assert_eq!(ids.len(), 1, "every answer carries the same media record");
    assert_eq!(server.counts().await.1, 1, "one media row");
    assert_eq!(
        faults.completes.load(Ordering::SeqCst),
        1,
        "the upload was completed once: the others found it confirmed"
    );
    assert!(server.object_bytes(&authorized.object_key).await == bytes);
}

/// Racing first `POST /parts` make one upload in the store: it is made
/// under the attempt's row lock, and every URL is bound to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_first_part_requests_make_one_upload() {
    let (server, faults) = MultipartFaults::start().await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(22).await;

    let signs = (0..6).map(|i| {
        let (guest, bytes, plan) = (&guest, &bytes, &plan);
        async move { guest.sign(id, bytes, plan, &[(i % 3) + 1]).await.remove(0) }
    });
    let signed = futures_util::future::join_all(signs).await;
    assert_eq!(faults.creates.load(Ordering::SeqCst), 1, "one upload made");
    let uploads: std::collections::BTreeSet<String> =
        signed.iter().map(|s| support::multipart::upload_of(&s.upload.url)).collect();
    assert_eq!(uploads.len(), 1, "every URL is bound to it");
    assert_eq!(
        server.upload_id(&authorized.object_key).await.as_ref(),
        uploads.iter().next(),
        "and it is the recorded one"
    );
    for s in signed.iter().take(3) {
        assert_eq!(server.put(&s.upload, part(&bytes, &plan, s.number)).await.status(), StatusCode::OK);
    }
    let claim = serde_json::json!({"size": FILE, "content_type": VIDEO, "composite_sha256": composite(&bytes, &plan)});
    assert_eq!(guest.confirm_raw(id, claim).await.status(), StatusCode::OK);
}
