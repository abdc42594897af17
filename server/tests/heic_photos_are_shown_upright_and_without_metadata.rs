//! An iPhone's HEIC photo gets the same renditions as a JPEG: decoded by
//! libheif (heif-convert), upright per its transformations, scaled, and
//! written with no metadata, so its GPS position never leaves the server;
//! the host alone gets the original.

use std::time::{Duration, Instant};

use crate::support;

use reqwest::StatusCode;
use support::TestServer;
use support::media::{assert_turned_clockwise, has_exif, heic, host_list, open_event, quadrants, upload_as, wall_item};

#[tokio::test]
async fn a_rotated_heic_photo_with_a_location_reaches_the_wall_upright_and_without_exif() {
    let server = TestServer::start().await;
    let _workers = upload_once_server::services::renditions::spawn(&server.state);
    let guest = open_event(&server).await;
    // Stored landscape, 64 × 32, with "rotate 90° clockwise to show" (6).
    let original = heic(quadrants(64, 32), 6);
    assert_eq!(&original[4..8], b"ftyp", "an ISO media file");
    assert!(has_exif(&original), "the fixture carries its EXIF block, GPS and all");
    let media = upload_as(&guest, "image/heic", "IMG_0001.HEIC", &original).await;

    let item = &wall_item(&guest, media.id).await;
    for url in [item["url"].as_str().unwrap(), item["thumb_url"].as_str().unwrap()] {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut r = server.http.get(url).send().await.unwrap();
        while r.status() == StatusCode::SERVICE_UNAVAILABLE && Instant::now() < deadline {
            r = server.http.get(url).send().await.unwrap();
        }
        assert_eq!(r.status(), StatusCode::OK, "{url}");
        assert_eq!(r.headers()["content-type"], "image/jpeg", "{url}: {:?}", r.headers().get("x-placeholder-reason"));
        let bytes = r.bytes().await.unwrap();
        assert!(!has_exif(&bytes), "{url}: no EXIF block, no GPS rationals");
        assert_turned_clockwise(&image::load_from_memory(&bytes).unwrap().to_rgb8(), url);
    }
    // The host alone has the original, byte for byte.
    let listed = host_list(&guest).await;
    assert_eq!(listed[0]["preview"], "ready");
    let r = server.http.get(listed[0]["original_url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), original.as_slice());
    assert_eq!(listed[0]["id"], media.id.to_string());
}
