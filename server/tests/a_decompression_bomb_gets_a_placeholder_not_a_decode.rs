//! Hostile guest: a PNG of a few KB that decodes to 400 or 64 megapixels is
//! refused from its header, before a pixel is decoded. It gets the
//! placeholder, with a fixed reason that carries no decoder text; the
//! rendition workers stay free, and an honest guest's photo of another
//! event, uploaded right after, is made as usual.

use crate::support;

use image::ImageFormat;
use reqwest::StatusCode;
use support::TestServer;
use support::media::{bomb_png, encoded, heic, open_event, quadrants, upload_as, wall_item};
use upload_once_server::media::jobs::JobState;

#[tokio::test]
async fn a_twenty_thousand_pixel_png_and_a_decompression_bomb_get_the_placeholder_without_a_decode() {
    let (server, _workers) = TestServer::start_rendering().await;
    let hostile = open_event(&server).await;
    let honest = open_event(&server).await;

    let huge = bomb_png(20_000, 20_000);
    let bomb = bomb_png(8_000, 8_000);
    assert!(huge.len() < 200_000 && bomb.len() < 40_000, "{} and {} bytes", huge.len(), bomb.len());
    let huge = upload_as(&hostile, "image/png", "huge.png", &huge).await;
    let bomb = upload_as(&hostile, "image/png", "bomb.png", &bomb).await;
    let photo =
        upload_as(&honest, "image/jpeg", "IMG_0001.JPG", &encoded(quadrants(1200, 900), ImageFormat::Jpeg)).await;

    for id in [huge.id, bomb.id] {
        let item = wall_item(&hostile, id).await;
        let r = server.http.get(item["thumb_url"].as_str().unwrap()).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-type"], "image/png");
        let reason = r.headers()["x-placeholder-reason"].to_str().unwrap().to_owned();
        assert_eq!(reason, "larger than the 50 megapixels a photo is decoded from", "no decoder text");
        let job = server.state.media.db.job(id).await.unwrap().unwrap();
        assert_eq!(job.state, JobState::Placeholder);
        assert_eq!(job.decoded_at, None, "refused from the header: nothing was decoded");
    }

    // The honest guest's photo is made.
    let item = wall_item(&honest, photo.id).await;
    let r = server.http.get(item["thumb_url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/jpeg");
    assert_eq!(server.state.media.db.job(photo.id).await.unwrap().unwrap().state, JobState::Done);
}

/// An HEIC whose primary image claims 20,000 × 20,000 px (its `ispe`
/// property rewritten) is refused from its boxes, before heif-convert
/// decodes a pixel, and its guest's budget is not charged for a decode.
#[tokio::test]
async fn an_heic_claiming_four_hundred_megapixels_gets_the_placeholder_without_a_decode() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let mut hostile = heic(quadrants(64, 32), 1);
    // Every size property (heif-enc writes one per image item).
    let sizes: Vec<usize> =
        hostile.windows(4).enumerate().filter(|(_, w)| *w == b"ispe").map(|(at, _)| at + 8).collect();
    assert!(!sizes.is_empty(), "the fixture has its size property");
    for at in sizes {
        hostile[at..at + 8].copy_from_slice(&[20_000u32.to_be_bytes(), 20_000u32.to_be_bytes()].concat());
    }
    let media = upload_as(&guest, "image/heic", "IMG_0666.HEIC", &hostile).await;

    let item = wall_item(&guest, media.id).await;
    assert_eq!(item["placeholder"], "larger than the 50 megapixels a photo is decoded from", "no tool's text");
    let job = server.state.media.db.job(media.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Placeholder);
    assert_eq!(job.decoded_at, None, "refused from its boxes: nothing was decoded");
}
