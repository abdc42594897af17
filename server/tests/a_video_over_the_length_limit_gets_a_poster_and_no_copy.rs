//! A video longer than `--video-max-duration` is not made shareable (no
//! transcode, no copy), but it gets its poster all the same: its thumbnail
//! is an upright JPEG still with no metadata, while its display URL serves
//! the placeholder with the reason, and the host's card says that reason
//! beside the original, which the host alone has.

use std::time::{Duration, Instant};

use crate::support;

use reqwest::StatusCode;
use support::media::{VIDEO_LOCATION, contains, has_exif, host_list, open_event, phone_video, upload_as};
use support::{Options, TestServer};
use upload_once_server::config::Config;

#[tokio::test]
async fn a_video_over_the_length_limit_gets_its_poster_and_the_placeholder() {
    let (server, _workers) = TestServer::start_rendering_with(Options {
        configure: Some(Box::new(|c: &mut Config| c.video_max_duration = Duration::from_secs(1))),
        ..Options::default()
    })
    .await;
    let guest = open_event(&server).await;
    // 2 s, over the 1 s limit; stored 160 × 96, shown turned: 96 × 160.
    let original = phone_video("libx264", "yuv420p", "mp4", 2, 160, 96);
    let media = upload_as(&guest, "video/mp4", "long.mp4", &original).await;

    let deadline = Instant::now() + Duration::from_secs(120);
    let entry = loop {
        let listed = host_list(&guest).await;
        let entry = listed.into_iter().find(|m| m["id"] == media.id.to_string()).unwrap();
        if entry["preview"] != "pending" {
            break entry;
        }
        assert!(Instant::now() < deadline, "the job never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(entry["preview"], "placeholder", "{entry}");
    let reason = entry["preview_reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with("longer than 1 minutes"), "{reason}");

    // The display: the placeholder, with the same reason, never the video.
    let r = server.http.get(media.url.as_deref().unwrap()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/png", "the placeholder");
    assert_eq!(r.headers()["x-placeholder-reason"].to_str().unwrap(), reason);

    // The thumbnail: its poster, upright, with no metadata.
    let thumb = media.url.as_deref().unwrap().replace("/display?", "/thumb?");
    let r = server.http.get(&thumb).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/jpeg", "the poster, not the placeholder");
    let poster = r.bytes().await.unwrap();
    assert!(!has_exif(&poster) && !contains(&poster, VIDEO_LOCATION), "no metadata in the poster");
    let still = image::load_from_memory(&poster).unwrap();
    assert_eq!((still.width(), still.height()), (96, 160), "upright");

    // No shareable copy was stored; the host has the original.
    let copy = upload_once_server::media::video_key(&media.object_key);
    assert!(server.state.objects.head(&copy).await.unwrap().is_none(), "no shareable copy");
    let r = server.http.get(entry["original_url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), original.as_slice());
}
