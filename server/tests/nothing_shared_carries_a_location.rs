//! Whatever kind of media a guest uploads, what the wall and the other
//! guests are given of it (its display and thumbnail URLs) never carries
//! the place it was taken: every kind the server shows inline is uploaded
//! here with a location in it (EXIF GPS, a QuickTime location atom, a
//! Matroska tag, a Vorbis comment, a PNG text chunk, trailing bytes), and
//! neither its display nor its thumbnail holds it, nor is the original.
//!
//! The kinds come from the server's own list (`INLINE_TYPES`): a kind added
//! there fails this test until it has a fixture here and is handled.

use std::time::Duration;

use crate::support;

use image::ImageFormat;
use reqwest::StatusCode;
use support::TestServer;
use support::media::{
    VIDEO_LOCATION, contains, encoded, get_once_made, has_exif, heic, open_event, phone_video, png_with_location,
    quadrants, tagged_video, upload_as, wall_item, with_exif,
};
use upload_once_server::routes::media::INLINE_TYPES;

/// A file of `content_type` with a location in it.
fn with_a_location(content_type: &str) -> Vec<u8> {
    let photo = quadrants(48, 32);
    let trailing = |mut bytes: Vec<u8>| {
        bytes.extend_from_slice(VIDEO_LOCATION.as_bytes());
        bytes
    };
    match content_type {
        "image/jpeg" => with_exif(photo, 1),
        "image/png" => png_with_location(&photo),
        "image/gif" => trailing(encoded(photo, ImageFormat::Gif)),
        "image/webp" => trailing(encoded(photo, ImageFormat::WebP)),
        // Not decoded by the server (no BMP decoder in its build): a header.
        "image/bmp" => trailing(b"BM\x36\0\0\0\0\0\0\0\x36\0\0\0".to_vec()),
        // No AVIF encoder here: bytes that say they are one.
        "image/avif" => trailing(b"\0\0\0\x1cftypavif\0\0\0\0avifmif1miaf".to_vec()),
        "image/heic" | "image/heif" => heic(photo, 1),
        "video/mp4" => phone_video("libx264", "yuv420p", "mp4", 1, 64, 48),
        "video/quicktime" => phone_video("libx264", "yuv420p", "mov", 1, 64, 48),
        "video/webm" => tagged_video("libvpx", "webm"),
        "video/ogg" => tagged_video("libtheora", "ogg"),
        other => panic!("no fixture for {other}: add one here, and make sure nothing shared of it carries a location"),
    }
}

/// Whether `bytes` carry the fixture's location, in any of its forms.
fn carries_a_location(bytes: &[u8]) -> bool {
    contains(bytes, VIDEO_LOCATION) || has_exif(bytes)
}

#[tokio::test]
async fn no_kind_of_media_shares_its_location() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let mut uploaded = Vec::new();
    for content_type in INLINE_TYPES {
        let original = with_a_location(content_type);
        assert!(carries_a_location(&original), "{content_type}: the fixture carries its location");
        let media = upload_as(&guest, content_type, "upload", &original).await;
        uploaded.push((*content_type, media.id, original));
    }
    // What the server makes renditions of (the rest gets the placeholder):
    // so that this test cannot pass by giving everything the placeholder.
    let made = |content_type: &str| !matches!(content_type, "image/avif" | "image/bmp");
    for (content_type, id, original) in uploaded {
        let item = wall_item(&guest, id).await;
        for url in [item["url"].as_str().unwrap(), item["thumb_url"].as_str().unwrap()] {
            let r = get_once_made(&server, url, Duration::from_secs(120)).await;
            assert_eq!(r.status(), StatusCode::OK, "{content_type}: {url}");
            let served = r.headers()["content-type"].to_str().unwrap().to_owned();
            let placeholder = served == "image/png";
            assert_eq!(!placeholder, made(content_type), "{content_type}: {url} is {served}");
            let bytes = r.bytes().await.unwrap();
            assert!(bytes.as_ref() != original.as_slice(), "{content_type}: {url} serves the original");
            assert!(!carries_a_location(&bytes), "{content_type}: {url} carries the location");
        }
    }
}
