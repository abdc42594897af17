//! A file the server cannot make a rendition of (a corrupt JPEG, a broken
//! HEIC photo, a video ffmpeg cannot read, a real phone video or HEIC photo
//! cut off half-way, as an interrupted copy leaves it) is shown as a placeholder image, with
//! the reason on the wall item, in the host's list and in a header: never a
//! 5xx, and never the original.

use crate::support;

use reqwest::StatusCode;
use support::TestServer;
use support::media::{heic, host_list, open_event, phone_video, quadrants, upload_as, wall_item};

/// The first half of `bytes`.
fn cut_in_half(bytes: Vec<u8>) -> Vec<u8> {
    bytes[..bytes.len() / 2].to_vec()
}

#[tokio::test]
async fn a_corrupt_jpeg_a_broken_heic_photo_and_a_broken_video_get_the_placeholder_with_a_reason() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    // A JPEG that starts right and then is noise.
    let mut corrupt = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xdb".to_vec();
    corrupt.extend((0..2000u32).map(|i| (i * 7919 % 251) as u8));
    let cases = [
        ("image/jpeg", "broken.jpg", corrupt, "not a readable"),
        ("image/heic", "IMG_0002.HEIC", b"\0\0\0\x18ftypheic\0\0\0\0mif1heic".to_vec(), "not a readable HEIC"),
        ("video/mp4", "clip.mp4", b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom".to_vec(), "not a readable video"),
        // A phone's H.264 .mp4 (its index at the end, no faststart) and an
        // HEIC photo, each cut off half-way.
        (
            "video/mp4",
            "IMG_0003.mp4",
            cut_in_half(phone_video("libx264", "yuv420p", "mp4", 2, 160, 96)),
            "not a readable video",
        ),
        ("image/heic", "IMG_0004.HEIC", cut_in_half(heic(quadrants(640, 480), 1)), "not a readable HEIC"),
    ];
    let mut ids = Vec::new();
    for (content_type, name, bytes, _) in &cases {
        ids.push(upload_as(&guest, content_type, name, bytes).await.id);
    }
    for ((content_type, _, bytes, reason), id) in cases.iter().zip(&ids) {
        let item = wall_item(&guest, *id).await;
        // The thumbnail of each is the placeholder, with its reason.
        let r = server.http.get(item["thumb_url"].as_str().unwrap()).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{content_type}");
        assert_eq!(r.headers()["content-type"], "image/png", "{content_type}");
        let header = r.headers()["x-placeholder-reason"].to_str().unwrap().to_owned();
        assert!(header.contains(reason), "{content_type}: {header}");
        let png = r.bytes().await.unwrap();
        assert_eq!(image::guess_format(&png).unwrap(), image::ImageFormat::Png);
        let on_wall = item["placeholder"].as_str().unwrap_or_default();
        assert!(on_wall.contains(reason), "{content_type}: {on_wall}");
        let r = server.http.get(item["url"].as_str().unwrap()).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{content_type}");
        assert_eq!(r.headers()["content-type"], "image/png");
        assert_ne!(r.bytes().await.unwrap().as_ref(), bytes.as_slice(), "{content_type}: not the original");
    }
    // The host sees why too.
    for entry in host_list(&guest).await {
        assert_eq!(entry["preview"], "placeholder", "{entry}");
        assert!(!entry["preview_reason"].as_str().unwrap_or_default().is_empty(), "{entry}");
    }
}
