//! A file above the multipart threshold goes up in parts through the same
//! attempt: authorize answers a plan (not a URL), `POST /parts` signs each
//! part, status lists the parts the store holds, and confirm assembles them
//! into one object, byte for byte, with one media record carrying the
//! composite checksum. Smaller files keep the single PUT.

use crate::support;

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::json;
use support::multipart::{FILE, MIB, PART, VIDEO, composite, file, options, part, plan};
use support::{Options, TestServer, problem};
use upload_once_core::wire::{Media, Upload};
use upload_once_server::secrets::sha256_hex;
use uuid::Uuid;

#[tokio::test]
async fn a_large_file_goes_up_in_parts_and_is_assembled_into_one_media_record() {
    let server = TestServer::start_with(options()).await;
    let guest = server.big_guest().await;
    let (id, bytes, authorized, plan) = guest.authorize_file(1).await;
    assert_eq!((plan.part_size, plan.part_count), (PART, 3), "11 MiB in 5 MiB parts");
    assert_eq!(plan.expires_at, authorized.expires_at, "the plan lasts as long as its attempt");
    let renewed: upload_once_core::wire::AttemptResponse = guest.renew(id).await.json().await.unwrap();
    assert_eq!(renewed.upload, authorized.upload, "renew answers the same plan");

    let status = guest.status_of(id).await;
    assert_eq!(status["parts"], json!([]), "no upload yet: no parts");
    assert_eq!(status["object_stored"], false);

    // The last part first: order does not matter, only numbers do.
    let signed = guest.sign(id, &bytes, &plan, &[3, 1]).await;
    for s in &signed {
        let (start, end) = plan.range(s.number, FILE);
        assert!(
            s.upload.url.starts_with(&server.upload_url_prefix(&authorized.object_key)),
            "bound to the attempt's key"
        );
        assert_eq!(s.upload.method, "PUT");
        assert!(s.upload.expires_at <= authorized.expires_at, "a part URL never outlives its attempt");
        let r = server.put(&s.upload, bytes[start as usize..end as usize].to_vec()).await;
        assert_eq!(r.status(), StatusCode::OK, "part {}", s.number);
    }
    let upload_id = server.upload_id(&authorized.object_key).await.expect("the first signing made the upload");

    let status = guest.status_of(id).await;
    let listed: Vec<(u64, u64, String)> = status["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["number"].as_u64().unwrap(), p["size"].as_u64().unwrap(), p["sha256"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        listed,
        vec![(1, PART, sha256_hex(&part(&bytes, &plan, 1))), (3, MIB, sha256_hex(&part(&bytes, &plan, 3)))],
        "the store's own list: the parts it holds, with their sizes and digests"
    );
    assert_eq!(status["object_stored"], false, "parts are not the object");
    let small = Uuid::new_v4();
    guest.authorize_video(small, MIB).await;
    let batch = guest.status(&[small, id]).await;
    assert_eq!(batch["results"][1], status, "the batch status says the same");
    assert_eq!(batch["results"][0].get("parts"), None, "a single-PUT attempt has no parts");

    let (code, body) = problem(guest.confirm_video(id, FILE).await).await;
    assert_eq!((code, body["code"].as_str()), (StatusCode::CONFLICT, Some("object_missing")), "part 2 is missing");
    assert_eq!(body["retryable"], true);

    guest.send_parts(id, &bytes, &plan, &[2]).await;
    let r = guest.confirm_video(id, FILE).await;
    assert_eq!(r.status(), StatusCode::OK);
    let media: Media = r.json().await.unwrap();
    assert_eq!(media.size, FILE);
    assert_eq!(media.content_type, VIDEO);
    assert_eq!(media.composite_sha256.as_deref(), Some(composite(&bytes, &plan).as_str()));
    assert_eq!(server.counts().await.1, 1, "one media record");
    assert!(
        server.object_bytes(&authorized.object_key).await == bytes,
        "the assembled object is the file, byte for byte"
    );
    assert!(!server.upload_is_open(&authorized.object_key, &upload_id).await, "the completed upload holds no parts");
    assert_eq!(server.open_local_uploads().await, Vec::<String>::new());
    assert_eq!(server.stored_keys().await, vec![authorized.object_key.clone()], "one object, no part files");

    let status = guest.status_of(id).await;
    assert_eq!(status["state"], "confirmed");
    assert_eq!(status["media"]["composite_sha256"].as_str(), media.composite_sha256.as_deref(), "status shows it too");
    let host = server
        .http
        .get(server.url(&format!("/v1/events/{}/media", guest.slug())))
        .bearer_auth(&guest.event.host_token)
        .send()
        .await
        .unwrap();
    let listed: serde_json::Value = host.json().await.unwrap();
    assert_eq!(
        listed["media"][0]["composite_sha256"].as_str(),
        media.composite_sha256.as_deref(),
        "and the host's list"
    );
}

#[tokio::test]
async fn files_up_to_the_threshold_keep_the_single_put_and_their_checksum_is_not_composite() {
    let server = TestServer::start_with(options()).await;
    let guest = server.big_guest().await;
    let bytes = file(PART, 2);
    let id = Uuid::new_v4();
    let authorized = guest.authorize_video(id, PART).await;
    let Some(Upload::Put(put)) = &authorized.upload else { panic!("a file at the threshold goes up in one PUT") };
    assert_eq!(server.put(put, bytes).await.status(), StatusCode::OK);
    let r = guest.confirm_video(id, PART).await;
    assert_eq!(r.status(), StatusCode::OK);
    let media: Media = r.json().await.unwrap();
    assert_eq!(media.composite_sha256, None);
    assert_eq!(guest.status_of(id).await.get("parts"), None, "no parts on a single-PUT attempt's status");

    let (code, body) = problem(guest.sign_raw(id, json!({"parts": [{"number": 1}]})).await).await;
    assert_eq!((code, body["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("not_multipart")));
}

#[tokio::test]
async fn the_part_size_grows_so_a_huge_file_has_at_most_ten_thousand_parts() {
    let server = TestServer::start_with(Options {
        multipart_threshold: Some(32 * MIB),
        part_size: Some(8 * MIB),
        // A session and an event may hold a file this large.
        configure: Some(Box::new(|c| {
            c.limits.max_bytes_per_session = 1 << 40;
            c.limits.max_bytes_per_event = 1 << 40;
        })),
        ..Default::default()
    })
    .await;
    let guest = server.big_guest().await;
    let size = 200 * 1024 * MIB;
    let plan = plan(&guest.authorize_video(Uuid::new_v4(), size).await);
    assert!(plan.part_count <= 10_000, "{} parts", plan.part_count);
    assert_eq!(plan.part_size % MIB, 0, "a whole number of MiB");
    assert!(plan.part_size > 8 * MIB && u64::from(plan.part_count) * plan.part_size >= size);
    let small = plan_of(&guest.authorize_video(Uuid::new_v4(), 33 * MIB).await);
    assert_eq!(small, (8 * MIB, 5), "the configured part size, when it fits");
}

fn plan_of(answer: &upload_once_core::wire::AttemptResponse) -> (u64, u32) {
    let p = plan(answer);
    (p.part_size, p.part_count)
}

/// The plan is fixed when the attempt is authorized: a server restarted
/// with other flags answers the same plan, and signs the same parts.
#[tokio::test]
async fn an_attempts_plan_survives_a_change_of_the_flags() {
    let first = TestServer::start_with(options()).await;
    let guest = first.big_guest().await;
    let id = Uuid::new_v4();
    let before = plan(&guest.authorize_video(id, FILE).await);

    let again = TestServer::start_with(Options {
        multipart_threshold: Some(64 * MIB),
        part_size: Some(8 * MIB),
        database_url: first.database_url.clone(),
        bucket: first.bucket.clone(),
        signing_key: None,
        ..Default::default()
    })
    .await;
    let guest = support::Guest { server: &again, event: guest.event.clone(), session: guest.session.clone() };
    let renewed: upload_once_core::wire::AttemptResponse = guest.renew(id).await.json().await.unwrap();
    assert_eq!(plan(&renewed), before, "the stored plan, not the new flags' (which would be one PUT)");
    let repeat = guest.authorize_video(id, FILE).await;
    assert_eq!(plan(&repeat), before, "a repeated authorize too");
    let bytes = file(FILE, 3);
    let signed = guest.sign(id, &bytes, &before, &[3]).await;
    let r = again.put(&signed[0].upload, part(&bytes, &before, 3)).await;
    assert_eq!(r.status(), StatusCode::OK, "the last part is 1 MiB, as planned");
    // A fresh attempt of the same size follows the new flags.
    let fresh = guest.authorize_video(Uuid::new_v4(), FILE).await;
    assert!(matches!(fresh.upload, Some(Upload::Put(_))), "under the new threshold: one PUT");
}

/// Each part URL binds its exact length and SHA-256: the headers the
/// browser must send are listed, and nothing else is needed.
#[tokio::test]
async fn a_part_url_lists_exactly_the_headers_to_send() {
    let server = TestServer::start_with(options()).await;
    let guest = server.big_guest().await;
    let id = Uuid::new_v4();
    let bytes = file(FILE, 4);
    let plan = plan(&guest.authorize_video(id, FILE).await);
    let signed = guest.sign(id, &bytes, &plan, &[1]).await;
    let expected: BTreeMap<String, String> = if support::is_s3() {
        let sha = sha256_hex(&part(&bytes, &plan, 1));
        [("x-amz-checksum-sha256".to_owned(), upload_once_server::storage::s3::checksum_header(&sha).unwrap())].into()
    } else {
        BTreeMap::new()
    };
    assert_eq!(signed[0].upload.headers, expected);
}
