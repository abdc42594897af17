//! A media the host rejects is taken down: its public links (display,
//! thumbnail; a video's display, its shareable copy) answer `410 removed`
//! for anyone who has them, while the host still sees it through the links
//! in the host's list; approved again, the public links work again.

use crate::support;

use image::{ImageFormat, Rgb, RgbImage};
use reqwest::StatusCode;
use support::media::{host_list, moderate, open_event, upload_as};
use support::{TestServer, problem};

async fn status(server: &TestServer, url: &str) -> StatusCode {
    let r = server.http.get(url).send().await.unwrap();
    let status = r.status();
    if status == StatusCode::GONE {
        let (_, p) = problem(r).await;
        assert_eq!(p["code"], "removed");
    }
    status
}

#[tokio::test]
async fn public_links_of_a_rejected_media_answer_410_and_the_host_still_sees_it() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let photo = support::media::encoded(RgbImage::from_pixel(64, 48, Rgb([200, 40, 40])), ImageFormat::Png);
    let media = upload_as(&guest, "image/png", "party.png", &photo).await;
    let video = upload_as(&guest, "video/mp4", "clip.mp4", b"\x00\x00\x00\x18ftypmp42 not a real video").await;
    let thumb = media.url.as_deref().unwrap().replacen("/display?", "/thumb?", 1);
    assert!(thumb.contains("/thumb?"), "{thumb}");

    // Before: everyone's links answer (once the renditions are made: `503`
    // until then).
    for url in [media.url.as_deref().unwrap(), &thumb, video.url.as_deref().unwrap()] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut got = status(&server, url).await;
        while got == StatusCode::SERVICE_UNAVAILABLE && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            got = status(&server, url).await;
        }
        assert_eq!(got, StatusCode::OK, "{url}");
    }

    moderate(&guest, media.id, "reject").await;
    moderate(&guest, video.id, "reject").await;
    for url in [media.url.as_deref().unwrap(), &thumb, video.url.as_deref().unwrap()] {
        assert_eq!(status(&server, url).await, StatusCode::GONE, "taken down: {url}");
    }
    // A host signature for another media does not open this one.
    let listed = host_list(&guest).await;
    let host_url =
        |id: uuid::Uuid| listed.iter().find(|m| m["id"] == id.to_string()).unwrap()["url"].as_str().unwrap().to_owned();
    let (host_photo, host_video) = (host_url(media.id), host_url(video.id));
    assert!(host_photo.contains("&host="), "{host_photo}");
    let forged = format!("{}&host={}", media.url.as_deref().unwrap(), host_video.rsplit("&host=").next().unwrap());
    assert_eq!(status(&server, &forged).await, StatusCode::GONE);
    // The host still sees both, and their originals.
    for url in [&host_photo, &host_video] {
        assert_eq!(status(&server, url).await, StatusCode::OK, "the host's {url}");
    }
    let original = listed.iter().find(|m| m["id"] == media.id.to_string()).unwrap()["original_url"].as_str().unwrap();
    assert_eq!(status(&server, original).await, StatusCode::OK);
    // The preview link's `host=` signature is for the preview alone: whoever
    // holds that link (it is shown in the host's page, and can be shared)
    // cannot open the original with it.
    let host_sig = host_photo.rsplit("&host=").next().unwrap();
    let (base, query) = original.split_once('?').unwrap();
    let query: Vec<String> = query
        .split('&')
        .map(|p| if p.starts_with("sig=") { format!("sig={host_sig}") } else { p.to_owned() })
        .collect();
    let from_preview = format!("{base}?{}", query.join("&"));
    assert_eq!(
        status(&server, &from_preview).await,
        StatusCode::NOT_FOUND,
        "no original from a preview: {from_preview}"
    );

    // Approved again: the public links work again.
    moderate(&guest, media.id, "approve").await;
    for url in [media.url.as_deref().unwrap(), &thumb] {
        assert_eq!(status(&server, url).await, StatusCode::OK, "back: {url}");
    }
    assert_eq!(status(&server, video.url.as_deref().unwrap()).await, StatusCode::GONE, "the video is still down");
}
