//! An object filed from parts reads like one object: whole, and in any
//! range, across the parts' edges too; its delete leaves nothing. The
//! embedded store files the parts as they are (its upload's directory,
//! renamed) instead of copying them into one file, so these reads are the
//! ones that stitch them together.

use crate::support;

use futures_util::StreamExt;
use reqwest::StatusCode;
use support::TestServer;
use support::multipart::{FILE, MIB, PART, VIDEO, file, options, plan};
use upload_once_core::wire::Media;
use uuid::Uuid;

async fn read_range(server: &TestServer, key: &str, first: u64, last: u64) -> std::io::Result<Vec<u8>> {
    let (meta, mut stream) = server.state.objects.get_range(key, first, last).await.unwrap().expect("stored");
    assert_eq!(meta.size, FILE);
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(out)
}

/// Uploads an 11 MiB video in its three parts (5, 5, 1 MiB) and confirms it.
async fn stored_in_parts(server: &TestServer, seed: u8) -> (String, Vec<u8>, Media) {
    let guest = server.big_guest().await;
    let bytes = file(FILE, seed);
    let id = Uuid::new_v4();
    let authorized = guest.authorize_video(id, FILE).await;
    let plan = plan(&authorized);
    assert_eq!(plan.part_count, 3);
    guest.send_parts(id, &bytes, &plan, &[3, 1, 2]).await;
    let r = guest.confirm_video(id, FILE).await;
    assert_eq!(r.status(), StatusCode::OK);
    (authorized.object_key, bytes, r.json().await.unwrap())
}

#[tokio::test]
async fn every_range_of_an_object_in_parts_is_its_bytes() {
    let server = TestServer::start_with(options()).await;
    let (key, bytes, media) = stored_in_parts(&server, 71).await;
    assert!(server.object_bytes(&key).await == bytes, "whole, in order");
    let head = server.state.objects.head(&key).await.unwrap().expect("stored");
    assert_eq!((head.size, head.content_type.as_str()), (FILE, VIDEO));
    if server.state.local_store.as_deref().is_some() {
        // (S3's HEAD only says it when asked with the checksum mode.)
        assert_eq!(head.composite_sha256, media.composite_sha256, "known by its parts' digests");
    }
    let end = FILE - 1;
    for (first, last, what) in [
        (0, 0, "the first byte"),
        (PART - 1, PART, "across the first edge"),
        (PART - 10, 2 * PART + 10, "across both edges"),
        (PART, 2 * PART - 1, "exactly the second part"),
        (2 * PART + 5, end, "inside the last part, to the end"),
        (end, end, "the last byte"),
        (123, end, "all but the first bytes"),
        (3 * MIB, 7 * MIB + 1, "from inside one part to inside the next"),
    ] {
        let got = read_range(&server, &key, first, last).await.unwrap();
        assert!(got == bytes[first as usize..=last as usize], "{what}: bytes {first}-{last}");
    }
}

#[tokio::test]
async fn a_media_link_serves_ranges_of_an_object_in_parts() {
    let server = TestServer::start_with(options()).await;
    let (_, bytes, media) = stored_in_parts(&server, 72).await;
    // The host's link to the original (a video's display link serves its
    // shareable copy, made by the rendition workers).
    let stored = server.state.records.media(media.id).await.unwrap().unwrap();
    let event = server.state.records.event_by_id(stored.event_id).await.unwrap().unwrap();
    let original = server.state.links.original_url(media.id, &upload_once_server::media::host_binding(&event));
    let r = server.http.get(original).header("range", format!("bytes={}-{}", PART - 3, PART + 2)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
    let got = r.bytes().await.unwrap();
    assert_eq!(&got[..], &bytes[(PART - 3) as usize..=(PART + 2) as usize], "the six bytes around the first edge");
}

#[tokio::test]
async fn deleting_an_object_in_parts_leaves_nothing() {
    let server = TestServer::start_with(options()).await;
    let (key, _, _) = stored_in_parts(&server, 73).await;
    assert_eq!(server.stored_keys().await, vec![key.clone()], "one object, its parts not listed as objects");
    server.state.objects.delete(&key).await.unwrap();
    assert_eq!(server.state.objects.head(&key).await.unwrap(), None);
    assert!(server.state.objects.get(&key).await.unwrap().is_none());
    assert_eq!(server.stored_keys().await, Vec::<String>::new());
    assert_eq!(server.temp_files(), Vec::<String>::new(), "nothing left where uploads are received");
    server.state.objects.delete(&key).await.unwrap();
}

/// A part of a filed object whose file lost bytes on disk (a damaged
/// disk, a hand edit): a read across it fails rather than close up the
/// gap with the next part's bytes.
#[tokio::test]
async fn a_part_that_lost_bytes_on_disk_fails_the_read() {
    let server = TestServer::start_with(options()).await;
    let (key, _, _) = stored_in_parts(&server, 74).await;
    if server.state.local_store.as_deref().is_none() {
        return; // S3 keeps its own bytes.
    }
    let part = server.state.config.data_dir.join("objects").join(&key).join("1");
    let f = std::fs::OpenOptions::new().write(true).open(&part).unwrap();
    f.set_len(PART - 1).unwrap();
    let read = read_range(&server, &key, 0, PART + 10).await;
    assert_eq!(read.map(|b| b.len()).map_err(|e| e.kind()), Err(std::io::ErrorKind::UnexpectedEof));
}
