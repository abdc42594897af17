//! A multipart duplicate found at confirm leaves no second object: a large
//! file goes up in parts without a whole-file SHA-256, so its content key
//! (the composite of its parts' digests) is only known when the store
//! assembles it. When that key already has a media in the event, confirm
//! deletes the new object and answers the existing media; the store then
//! holds one object and no part or upload of the duplicate.

use crate::support;

use reqwest::StatusCode;
use support::TestServer;
use support::multipart::{FILE, composite, options, plan};
use upload_once_core::wire::Media;
use uuid::Uuid;

#[tokio::test]
async fn the_second_upload_of_a_large_file_is_answered_with_the_first_media() {
    let server = TestServer::start_with(options()).await;
    let first = server.big_guest().await;
    let (first_id, video, a, a_plan) = first.authorize_file(7).await;
    first.send_parts(first_id, &video, &a_plan, &[1, 2, 3]).await;
    let r = first.confirm_video(first_id, FILE).await;
    assert_eq!(r.status(), StatusCode::OK);
    let stored: Media = r.json().await.unwrap();
    assert_eq!(stored.composite_sha256.as_deref(), Some(composite(&video, &a_plan).as_str()));
    assert_eq!(server.stored_keys().await, vec![a.object_key.clone()]);

    // The same video from another device: nothing tells the server before
    // its parts are assembled.
    let second = server.guest_of(&first.event).await;
    let id = Uuid::new_v4();
    let b = second.authorize_video(id, FILE).await;
    let b_plan = plan(&b);
    second.send_parts(id, &video, &b_plan, &[1, 2, 3]).await;
    let upload_id = server.upload_id(&b.object_key).await.expect("an upload");
    assert_eq!(server.listed_parts(&b.object_key, &upload_id).await, vec![1, 2, 3]);

    let r = second.confirm_video(id, FILE).await;
    assert_eq!(r.status(), StatusCode::OK);
    let answered: Media = r.json().await.unwrap();
    assert_eq!(answered.id, stored.id, "the first upload's media");
    assert!(answered.duplicate);
    assert_eq!(answered.attempt_id, id, "told as its own attempt, never the other guest's ({first_id})");

    // One object, and nothing of the second upload: no object, no upload,
    // no part.
    assert_eq!(server.stored_keys().await, vec![a.object_key.clone()], "one object");
    assert!(server.state.objects.head(&b.object_key).await.unwrap().is_none());
    assert!(!server.upload_is_open(&b.object_key, &upload_id).await, "the upload is over");
    assert!(server.listed_parts(&b.object_key, &upload_id).await.is_empty(), "no part left");
    assert!(server.open_local_uploads().await.is_empty());
    assert_eq!(server.object_bytes(&a.object_key).await, video, "the kept object is whole");

    let status = second.status_of(id).await;
    assert_eq!(status["state"], "confirmed");
    assert_eq!(status["media"]["id"], stored.id.to_string());
    assert_eq!(status["media"]["duplicate"], true);
    let again: Media = second.confirm_video(id, FILE).await.json().await.unwrap();
    assert_eq!(again.id, stored.id, "a repeated confirm");
    assert_eq!(server.counts().await, (2, 1));
    assert_eq!(server.host_list(&first.event).await.deduplicated, Some(1));

    // Once no URL of the duplicate can work, the sweeper makes sure its
    // object is gone, and keeps the media's. (S3 cannot refuse a presigned
    // PUT that arrives late, as a direct write does here.)
    server.store_directly(&b.object_key, "video/mp4", b"a late PUT").await;
    assert_eq!(server.stored_keys().await.len(), 2);
    server.sweep().await;
    assert_eq!(server.stored_keys().await.len(), 2, "not before the attempt's URLs expire");
    server.clock.advance(server.state.lifetimes.attempt_ttl_ms() + 1);
    server.sweep().await;
    assert_eq!(server.stored_keys().await, vec![a.object_key.clone()]);
    assert_eq!(second.status_of(id).await["state"], "confirmed");
    assert_eq!(server.object_bytes(&a.object_key).await, video);
}
