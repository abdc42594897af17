//! A phone's video reaches the wall and the other guests only as its
//! renditions: a poster (thumbnail and display stills, upright per the
//! rotation matrix, no metadata) and a shareable MP4 (H.264 + AAC, the
//! index before the data, no location, make, model or creation time),
//! whose duration and size are on the wall item. An H.264 original is
//! copied, not encoded again; an HEVC `.mov` is encoded to H.264. The host
//! alone gets the original, metadata and all. A video whose tools run past
//! their time is killed and gets the placeholder; a job stopped mid-way
//! (a shutdown) leaves no scratch file and no ffmpeg behind.
//!
//! The fixtures are made here by ffmpeg (support/media.rs, `phone_video`).

use std::time::{Duration, Instant};

use crate::support;

use reqwest::StatusCode;
use serde_json::Value;
use support::media::{
    VIDEO_LOCATION, VIDEO_MODEL, contains, ffprobe, has_encoder, host_list, open_event, phone_video, top_level_boxes,
    upload_as, wall_item,
};
use support::{Options, TestServer};
use upload_once_server::config::Config;
use upload_once_server::media::video::parse_probe;

/// GETs `url` until its rendition is made (`503` meanwhile).
async fn made(server: &TestServer, url: &str) -> reqwest::Response {
    support::media::get_once_made(server, url, Duration::from_secs(120)).await
}

/// The sizes of the video stream's packets, in order.
fn packet_sizes(bytes: &[u8]) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("video");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=size", "-of", "csv=p=0"])
        .arg(&path)
        .output()
        .expect("ffprobe runs");
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Every tag name in an ffprobe answer (the format's and each stream's).
fn tag_names(probed: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        probed["format"]["tags"].as_object().map(|t| t.keys().cloned().collect()).unwrap_or_default();
    for stream in probed["streams"].as_array().unwrap() {
        names.extend(stream["tags"].as_object().map(|t| t.keys().cloned().collect::<Vec<_>>()).unwrap_or_default());
    }
    names
}

#[tokio::test]
async fn a_phone_video_is_shared_as_an_upright_poster_and_an_mp4_with_no_metadata() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let mut cases = vec![("libx264", "mp4", "video/mp4", "h264 is copied")];
    if has_encoder("libx265") {
        cases.push(("libx265", "mov", "video/quicktime", "hevc is encoded to h264"));
    } else {
        eprintln!("this ffmpeg has no libx265: the HEVC case is not run");
    }
    for (encoder, container, content_type, case) in cases {
        // Stored landscape, 160 × 96, to be shown turned: 96 × 160.
        let original = phone_video(encoder, "yuv420p", container, 2, 160, 96);
        let fixture = ffprobe(&original);
        assert!(contains(&original, VIDEO_LOCATION) && contains(&original, VIDEO_MODEL), "{case}: the fixture's tags");
        let (as_stored, _) = parse_probe(&serde_json::to_vec(&fixture).unwrap()).unwrap();
        assert_eq!((as_stored.width, as_stored.height), (96, 160), "{case}: the fixture's rotation");
        assert_ne!(top_level_boxes(&original).iter().position(|b| b == "moov"), Some(1), "{case}: no faststart");

        let media = upload_as(&guest, content_type, &format!("IMG_0001.{container}"), &original).await;
        let item = wall_item(&guest, media.id).await;
        assert_eq!(item["url"].as_str(), media.url.as_deref(), "{case}");

        // The shareable video.
        let r = made(&server, item["url"].as_str().unwrap()).await;
        assert_eq!(r.status(), StatusCode::OK, "{case}");
        assert_eq!(r.headers()["content-type"], "video/mp4", "{case}");
        let shared = r.bytes().await.unwrap().to_vec();
        assert!(shared != original, "{case}: the shared video is not the original");
        for secret in [VIDEO_LOCATION, VIDEO_MODEL, "Pocketphone"] {
            assert!(!contains(&shared, secret), "{case}: {secret:?} is in the shared video");
        }
        let probed = ffprobe(&shared);
        let tags = tag_names(&probed);
        for tag in tags.iter().map(|t| t.to_lowercase()) {
            for word in ["location", "make", "model", "creation_time", "xyz"] {
                assert!(!tag.contains(word), "{case}: tag {tag} in the shared video");
            }
        }
        let boxes = top_level_boxes(&shared);
        let (moov, mdat) = (boxes.iter().position(|b| b == "moov"), boxes.iter().position(|b| b == "mdat"));
        assert!(moov.is_some() && moov < mdat, "{case}: faststart, the index first: {boxes:?}");
        // H.264 is copied (its frames as they were, the first but for its
        // SEI); HEVC is encoded again.
        let (before, after) = (packet_sizes(&original), packet_sizes(&shared));
        assert_eq!(before.len(), after.len(), "{case}: every frame");
        let copied = before[1..] == after[1..];
        assert_eq!(copied, encoder == "libx264", "{case}: copied {copied}");
        let (shown, plain) = parse_probe(&serde_json::to_vec(&probed).unwrap()).unwrap();
        assert_eq!(shown.video_codec, "h264", "{case}");
        assert_eq!(shown.audio_codec.as_deref(), Some("aac"), "{case}");
        assert!(plain, "{case}: 8-bit 4:2:0");
        assert_eq!((shown.width, shown.height), (96, 160), "{case}: shown upright");
        // Its duration and size, on the wall once it is made.
        let item = wall_item(&guest, media.id).await;
        let duration = item["duration_ms"].as_u64().unwrap_or_default();
        assert!((1_800..=2_300).contains(&duration), "{case}: {item}");
        assert!(item.get("placeholder").is_none(), "{case}: {item}");
        // A player seeks in it with a range.
        let r = server.http.get(item["url"].as_str().unwrap()).header("range", "bytes=0-99").send().await.unwrap();
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT, "{case}");
        assert_eq!(r.bytes().await.unwrap().as_ref(), &shared[..100], "{case}");

        // The poster: a JPEG still, upright, with no metadata.
        let r = made(&server, item["thumb_url"].as_str().unwrap()).await;
        assert_eq!(r.status(), StatusCode::OK, "{case}");
        assert_eq!(r.headers()["content-type"], "image/jpeg", "{case}");
        let poster = r.bytes().await.unwrap();
        assert!(!support::media::has_exif(&poster), "{case}: no EXIF in the poster");
        let still = image::load_from_memory(&poster).unwrap();
        assert_eq!((still.width(), still.height()), (96, 160), "{case}: the poster is upright");

        // The host alone has the original, byte for byte, tags and all.
        let listed = host_list(&guest).await;
        let entry = listed.iter().find(|m| m["id"] == media.id.to_string()).unwrap();
        assert_eq!(entry["preview"], "ready", "{case}");
        let r = server.http.get(entry["original_url"].as_str().unwrap()).send().await.unwrap();
        assert_eq!(r.bytes().await.unwrap().as_ref(), original.as_slice(), "{case}");
    }
}

#[tokio::test]
async fn a_video_whose_tools_run_past_their_time_gets_the_placeholder() {
    let (server, _workers) = TestServer::start_rendering_with(Options {
        configure: Some(Box::new(|c: &mut Config| c.video_timeout = Duration::from_millis(1))),
        ..Options::default()
    })
    .await;
    let guest = open_event(&server).await;
    let original = phone_video("libx264", "yuv420p", "mp4", 1, 64, 48);
    let media = upload_as(&guest, "video/mp4", "clip.mp4", &original).await;
    let r = made(&server, media.url.as_deref().unwrap()).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/png", "the placeholder, not the original");
    let reason = r.headers()["x-placeholder-reason"].to_str().unwrap().to_owned();
    assert!(reason.contains("takes longer to process than the server allows"), "{reason}");
    // The reason names no path, tool or output.
    for word in ["ffmpeg", "ffprobe", "/", "killed"] {
        assert!(!reason.contains(word), "{reason}");
    }
}

/// The ffmpeg processes whose arguments mention `dir`.
fn tools_under(dir: &std::path::Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(&needle) && (cmdline.contains("ffmpeg") || cmdline.contains("ffprobe")))
        .collect()
}

#[tokio::test]
async fn a_job_stopped_mid_transcode_leaves_no_scratch_file_and_no_ffmpeg() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().to_owned();
    let server = TestServer::start_with(Options {
        configure: Some(Box::new(move |c: &mut Config| c.video_scratch_dir = Some(dir))),
        ..Options::default()
    })
    .await;
    let mut workers = upload_once_server::services::renditions::spawn(&server.state);
    let guest = open_event(&server).await;
    // Long enough to be caught at work: 20 s at 640 × 480, encoded again
    // (4:4:4 is not copied).
    let original = phone_video("libx264", "yuv444p", "mp4", 20, 640, 480);
    upload_as(&guest, "video/mp4", "long.mp4", &original).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while tools_under(scratch.path()).iter().all(|c| !c.contains("libx264") && !c.contains("-c copy")) {
        assert!(Instant::now() < deadline, "no ffmpeg started on the video");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 1, "one scratch directory while it works");
    // What a shutdown does to the workers.
    workers.abort();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tools_under(scratch.path()).is_empty() || std::fs::read_dir(scratch.path()).unwrap().count() > 0 {
        assert!(Instant::now() < deadline, "left behind: {:?}", tools_under(scratch.path()));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn without_ffmpeg_a_video_gets_the_placeholder_and_never_the_original() {
    let (server, _workers) = TestServer::start_rendering_with(Options {
        configure: Some(Box::new(|c: &mut Config| c.ffmpeg = "/nonexistent/ffmpeg".into())),
        ..Options::default()
    })
    .await;
    // A stranger learns ready; the admin learns how videos are handled.
    let r = server.http.get(server.url("/readyz")).send().await.unwrap();
    assert_eq!(r.text().await.unwrap(), "ready");
    let r = server.http.get(server.url("/readyz")).bearer_auth(support::ADMIN).send().await.unwrap();
    let said = r.text().await.unwrap();
    assert!(said.starts_with("ready\nvideos: the placeholder only") && said.contains("/nonexistent/ffmpeg"), "{said}");

    let guest = open_event(&server).await;
    let original = phone_video("libx264", "yuv420p", "mp4", 1, 64, 48);
    let media = upload_as(&guest, "video/mp4", "clip.mp4", &original).await;
    let r = made(&server, media.url.as_deref().unwrap()).await;
    assert_eq!(r.headers()["content-type"], "image/png", "the placeholder");
    let reason = r.headers()["x-placeholder-reason"].to_str().unwrap().to_owned();
    assert_eq!(reason, "videos are not made shareable on this server");
    assert!(r.bytes().await.unwrap().as_ref() != original.as_slice());
}

#[tokio::test]
async fn the_admin_learns_which_ffmpeg_makes_the_videos() {
    let server = TestServer::start().await;
    let r = server.http.get(server.url("/readyz")).bearer_auth(support::ADMIN).send().await.unwrap();
    let said = r.text().await.unwrap();
    assert!(said.starts_with("ready\nvideos: posters and shareable MP4s (ffmpeg version"), "{said}");
    assert!(said.contains("\nHEIC photos: decoded by heif-convert ("), "{said}");
    let r = server.http.get(server.url("/readyz")).send().await.unwrap();
    assert_eq!(r.text().await.unwrap(), "ready", "a stranger learns nothing of the tools");
}

#[tokio::test]
async fn a_playlist_sent_as_a_video_reads_no_file_of_the_server() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    // A video on the server's disk (another guest's, in a scratch
    // directory), and a playlist naming it, sent as an MP4.
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("other-guest.mp4");
    std::fs::write(&secret, phone_video("libx264", "yuv420p", "mp4", 1, 64, 48)).unwrap();
    let playlist = format!(
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\nfile://{}\n#EXT-X-ENDLIST\n",
        secret.display()
    );
    let media = upload_as(&guest, "video/mp4", "clip.mp4", playlist.as_bytes()).await;
    let r = made(&server, media.url.as_deref().unwrap()).await;
    assert_eq!(r.headers()["content-type"], "image/png", "the placeholder, not a video made of the server's file");
    let reason = r.headers()["x-placeholder-reason"].to_str().unwrap().to_owned();
    assert_eq!(reason, "not a readable video file");
}
