//! A phone photo shown on the wall or to guests is a rendition: decoded
//! upright (its EXIF orientation applied), scaled to fit, and written with
//! no metadata at all, so its GPS position never leaves the server. The
//! original, metadata and all, goes to the host alone.

use crate::support;

use reqwest::StatusCode;
use support::TestServer;
use support::media::{
    assert_turned_clockwise, has_exif, host_list, open_event, quadrants, upload_as, wall_item, with_exif,
};

#[tokio::test]
async fn a_rotated_photo_with_a_location_reaches_the_wall_upright_and_without_exif() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    // Stored landscape, 64×32, with "rotate 90° clockwise to show" (6).
    let original = with_exif(quadrants(64, 32), 6);
    assert!(has_exif(&original), "the fixture carries its EXIF block");
    let media = upload_as(&guest, "image/jpeg", "IMG_0001.JPG", &original).await;

    // The guest's own answer points at the rendition, not the original.
    assert!(media.url.as_deref().unwrap().contains("/display?"), "{}", media.url.as_deref().unwrap());
    let item = &wall_item(&guest, media.id).await;
    assert_eq!(item["id"], media.id.to_string());
    assert_eq!(item["url"].as_str(), media.url.as_deref());
    for url in [item["url"].as_str().unwrap(), item["thumb_url"].as_str().unwrap()] {
        let r = server.http.get(url).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{url}");
        assert_eq!(r.headers()["content-type"], "image/jpeg");
        let bytes = r.bytes().await.unwrap();
        assert!(!has_exif(&bytes), "{url}: no EXIF block, no GPS rationals");
        // Upright, turned clockwise (the small photo is not scaled up).
        assert_turned_clockwise(&image::load_from_memory(&bytes).unwrap().to_rgb8(), url);
    }

    // The host alone gets the original, byte for byte, EXIF and all.
    let listed = host_list(&guest).await;
    assert_eq!(listed[0]["url"].as_str(), media.url.as_deref(), "the host's list shows the rendition too");
    assert_eq!(listed[0]["preview"], "ready");
    let original_url = listed[0]["original_url"].as_str().unwrap();
    assert!(original_url.contains("/content?"), "{original_url}");
    let r = server.http.get(original_url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.bytes().await.unwrap().as_ref(), original.as_slice());
    // And the rendition's signature does not open it.
    let display_sig = media.url.as_deref().unwrap().split_once("sig=").unwrap().1;
    let forged = format!("{}/v1/media/{}/content?sig={display_sig}", server.base, media.id);
    assert_eq!(server.http.get(forged).send().await.unwrap().status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_large_photo_is_scaled_to_the_display_and_thumbnail_sizes() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let original = support::media::encoded(quadrants(2400, 1800), image::ImageFormat::Png);
    let media = upload_as(&guest, "image/png", "big.png", &original).await;
    let item = &wall_item(&guest, media.id).await;
    for (url, size) in
        [(item["url"].as_str().unwrap(), (1600, 1200)), (item["thumb_url"].as_str().unwrap(), (400, 300))]
    {
        let r = server.http.get(url).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let shown = image::load_from_memory(&r.bytes().await.unwrap()).unwrap();
        assert_eq!((shown.width(), shown.height()), size, "{url}");
    }
}
