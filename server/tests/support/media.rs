//! Helpers of the media tests (renditions, ranges, the live wall, the ZIP):
//! uploads of any type, photos with EXIF, the host's calls.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use reqwest::StatusCode;
use serde_json::{Value, json};
use upload_once_core::wire::{AttemptResponse, Media};
use upload_once_server::services::renditions::Workers;
use uuid::Uuid;

use super::{ADMIN, Guest, Options, TestServer};

impl TestServer {
    /// [`TestServer::start`], with its rendition workers running (until
    /// the `Workers` answered is dropped).
    pub async fn start_rendering() -> (TestServer, Workers) {
        Self::start_rendering_with(Options::default()).await
    }

    /// [`TestServer::start_with`], with its rendition workers running
    /// (until the `Workers` answered is dropped).
    pub async fn start_rendering_with(options: Options) -> (TestServer, Workers) {
        let server = TestServer::start_with(options).await;
        let workers = upload_once_server::services::renditions::spawn(&server.state);
        (server, workers)
    }
}

/// authorize + PUT + confirm of `bytes` as `content_type`, under `filename`.
pub async fn upload_as(guest: &Guest<'_>, content_type: &str, filename: &str, bytes: &[u8]) -> Media {
    let id = Uuid::new_v4();
    let r = guest
        .authorize_raw(json!({"id": id, "filename": filename, "size": bytes.len(), "content_type": content_type}))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED, "authorize {content_type}");
    let a: AttemptResponse = r.json().await.unwrap();
    assert_eq!(guest.server.put(a.put().unwrap(), bytes.to_vec()).await.status(), StatusCode::OK, "{content_type}");
    let r = guest.confirm_raw(id, json!({"size": bytes.len(), "content_type": content_type})).await;
    assert_eq!(r.status(), StatusCode::OK, "confirm {content_type}");
    r.json().await.unwrap()
}

/// An event that takes anything, without moderation, and a guest of it.
pub async fn open_event(server: &TestServer) -> Guest<'_> {
    let slug = format!("ev-{}", &Uuid::new_v4().simple().to_string()[..12]);
    let event = server.create_event(&slug, 1 << 30, &["*/*"], "none").await;
    server.guest_of(&event).await
}

/// The host's list of an event (`GET /v1/events/{slug}/media`).
pub async fn host_list(guest: &Guest<'_>) -> Vec<Value> {
    let r = guest
        .server
        .http
        .get(guest.server.url(&format!("/v1/events/{}/media", guest.slug())))
        .bearer_auth(&guest.event.host_token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    v["media"].as_array().unwrap().clone()
}

/// `POST /v1/media/{id}/moderation` as the event's host.
pub async fn moderate(guest: &Guest<'_>, media: Uuid, decision: &str) -> Value {
    let r = guest
        .server
        .http
        .post(guest.server.url(&format!("/v1/media/{media}/moderation")))
        .bearer_auth(&guest.event.host_token)
        .json(&json!({"decision": decision}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "moderation");
    r.json().await.unwrap()
}

/// One page of the wall, as its guests read it.
pub async fn wall(guest: &Guest<'_>) -> Value {
    let r = guest
        .server
        .http
        .get(guest.server.url(&format!("/v1/events/{}/wall", guest.slug())))
        .header("x-guest-code", &guest.event.guest_code)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// The wall's item for `id` once the wall shows it. The wall shows an
/// approved media once its renditions are settled, which the test's
/// rendition workers do: this reads the wall until then (a bound on a hang,
/// not a measure of speed).
pub async fn wall_item(guest: &Guest<'_>, id: Uuid) -> Value {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let page = wall(guest).await;
        if let Some(item) = page["items"].as_array().unwrap().iter().find(|i| i["id"] == id.to_string()) {
            return item.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "the wall never showed {id}: {page}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// GETs `url`, again at once while it answers `503` (its rendition is not
/// made yet), for at most `limit`: the last answer.
pub async fn get_once_made(server: &TestServer, url: &str, limit: std::time::Duration) -> reqwest::Response {
    let deadline = std::time::Instant::now() + limit;
    let mut r = server.http.get(url).send().await.unwrap();
    while r.status() == StatusCode::SERVICE_UNAVAILABLE && std::time::Instant::now() < deadline {
        r = server.http.get(url).send().await.unwrap();
    }
    r
}

/// Waits until the rendition job of `id` has ended and, if the media is
/// approved, its end has placed it on the wall: after this, an approval
/// places it at once (the test's rendition workers end the job).
pub async fn settled(server: &TestServer, id: Uuid) {
    use upload_once_server::media::jobs::JobState;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let job = server.state.media.db.job(id).await.unwrap();
        let media = server.state.records.media(id).await.unwrap().expect("the media exists");
        let ended = job.is_some_and(|j| matches!(j.state, JobState::Done | JobState::Placeholder));
        if ended && (media.moderation != upload_once_core::wire::Moderation::Approved || media.wall_seq.is_some()) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "the rendition job of {id} never ended");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The admin token of the test servers.
pub fn admin() -> &'static str {
    ADMIN
}

/// The four colours of [`quadrants`], top-left, top-right, bottom-left,
/// bottom-right.
pub const RED: [u8; 3] = [230, 20, 20];
pub const BLUE: [u8; 3] = [20, 20, 230];
pub const GREEN: [u8; 3] = [20, 200, 20];
pub const WHITE: [u8; 3] = [250, 250, 250];

/// A `width`×`height` picture in four solid quadrants: red, blue (top);
/// green, white (bottom).
pub fn quadrants(width: u32, height: u32) -> RgbImage {
    RgbImage::from_fn(width, height, |x, y| {
        Rgb(match (x < width / 2, y < height / 2) {
            (true, true) => RED,
            (false, true) => BLUE,
            (true, false) => GREEN,
            (false, false) => WHITE,
        })
    })
}

/// `image` encoded as `format`.
pub fn encoded(image: RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image).write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// The latitude written into [`with_exif`]'s GPS block: 52° 31' 12.34" N.
pub const LATITUDE: [(u32, u32); 3] = [(52, 1), (31, 1), (1234, 100)];

/// The APP1 segment of an EXIF block (little-endian TIFF): IFD0 with the
/// orientation and a pointer to a GPS IFD holding a latitude.
pub fn exif_segment(orientation: u16) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(b"II\x2a\x00");
    t.extend_from_slice(&8u32.to_le_bytes());
    // IFD0 at 8: two entries, then the next-IFD offset.
    let ifd0_len = 2 + 2 * 12 + 4;
    let gps_at = 8 + ifd0_len as u32;
    t.extend_from_slice(&2u16.to_le_bytes());
    // 0x0112 Orientation, SHORT, 1.
    t.extend_from_slice(&0x0112u16.to_le_bytes());
    t.extend_from_slice(&3u16.to_le_bytes());
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(&orientation.to_le_bytes());
    t.extend_from_slice(&[0, 0]);
    // 0x8825 GPSInfo, LONG, 1.
    t.extend_from_slice(&0x8825u16.to_le_bytes());
    t.extend_from_slice(&4u16.to_le_bytes());
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(&gps_at.to_le_bytes());
    t.extend_from_slice(&0u32.to_le_bytes());
    // GPS IFD: latitude ref and latitude.
    let gps_len = 2 + 2 * 12 + 4;
    let data_at = gps_at + gps_len as u32;
    t.extend_from_slice(&2u16.to_le_bytes());
    t.extend_from_slice(&0x0001u16.to_le_bytes());
    t.extend_from_slice(&2u16.to_le_bytes());
    t.extend_from_slice(&2u32.to_le_bytes());
    t.extend_from_slice(b"N\0\0\0");
    t.extend_from_slice(&0x0002u16.to_le_bytes());
    t.extend_from_slice(&5u16.to_le_bytes());
    t.extend_from_slice(&3u32.to_le_bytes());
    t.extend_from_slice(&data_at.to_le_bytes());
    t.extend_from_slice(&0u32.to_le_bytes());
    for (num, den) in LATITUDE {
        t.extend_from_slice(&num.to_le_bytes());
        t.extend_from_slice(&den.to_le_bytes());
    }
    let mut payload = b"Exif\0\0".to_vec();
    payload.extend_from_slice(&t);
    let mut segment = vec![0xff, 0xe1];
    segment.extend_from_slice(&((payload.len() + 2) as u16).to_be_bytes());
    segment.extend_from_slice(&payload);
    segment
}

/// A JPEG of `image` with [`exif_segment`] right after its SOI marker.
pub fn with_exif(image: RgbImage, orientation: u16) -> Vec<u8> {
    let jpeg = encoded(image, ImageFormat::Jpeg);
    assert_eq!(&jpeg[..2], b"\xff\xd8");
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&exif_segment(orientation));
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// Whether `bytes` hold an EXIF block (an APP1 `Exif` segment) or the GPS
/// latitude's raw rationals anywhere.
pub fn has_exif(bytes: &[u8]) -> bool {
    let mut rationals = Vec::new();
    for (num, den) in LATITUDE {
        rationals.extend_from_slice(&num.to_le_bytes());
        rationals.extend_from_slice(&den.to_le_bytes());
    }
    bytes.windows(6).any(|w| w == b"Exif\0\0") || bytes.windows(rationals.len()).any(|w| w == rationals.as_slice())
}

/// Asserts that `shown` is [`quadrants`] of 64 × 32 turned clockwise to
/// 32 × 64 (EXIF orientation 6 applied): the stored bottom-left (green) is
/// now top-left, the stored top-left (red) top-right, and so on.
pub fn assert_turned_clockwise(shown: &RgbImage, what: &str) {
    assert_eq!((shown.width(), shown.height()), (32, 64), "{what}: upright");
    let at = |x: u32, y: u32| shown.get_pixel(x, y).0;
    assert!(near(at(8, 16), GREEN), "{what}: top-left {:?}", at(8, 16));
    assert!(near(at(24, 16), RED), "{what}: top-right {:?}", at(24, 16));
    assert!(near(at(8, 48), WHITE), "{what}: bottom-left {:?}", at(8, 48));
    assert!(near(at(24, 48), BLUE), "{what}: bottom-right {:?}", at(24, 48));
}

/// Whether `px` is `want`, give or take what JPEG does to a solid block.
pub fn near(px: [u8; 3], want: [u8; 3]) -> bool {
    px.iter().zip(want).all(|(&a, b)| a.abs_diff(b) <= 40)
}

/// A valid all-white 1-bit PNG of `width` × `height`: a few KB on the wire
/// for tens of megapixels decoded (a decompression bomb).
pub fn bomb_png(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().unwrap();
    let row = width.div_ceil(8) as usize;
    writer.write_image_data(&vec![0xff; row * height as usize]).unwrap();
    writer.finish().unwrap();
    out
}

/// The place a phone video's fixture says it was taken (ISO 6709).
pub const VIDEO_LOCATION: &str = "+48.8584+002.2945/";
/// The device model a phone video's fixture carries.
pub const VIDEO_MODEL: &str = "Pocketphone 15 Pro";

/// Whether this ffmpeg has the encoder `name` (`libx265`, …).
pub fn has_encoder(name: &str) -> bool {
    let out = std::process::Command::new("ffmpeg").args(["-hide_banner", "-encoders"]).output();
    let out = out.expect("ffmpeg runs (cargo xtask setup installs it)");
    String::from_utf8_lossy(&out.stdout).split_whitespace().any(|word| word == name)
}

/// A phone-like video made by ffmpeg in the test: `seconds` of its test
/// pattern (`width` × `height`, stored landscape) with a tone, encoded by
/// `encoder` (`libx264`, `libx265`) in `pix_fmt` (`yuv420p`: what phones
/// write) into `container` (`mp4`, `mov`), with
/// a 90° rotation, a location, a make and model and a creation time, and
/// its index at the end (no faststart), as a phone writes it.
pub fn phone_video(encoder: &str, pix_fmt: &str, container: &str, seconds: u32, width: u32, height: u32) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join(format!("plain.{container}"));
    let out = dir.path().join(format!("clip.{container}"));
    let source = format!("testsrc=size={width}x{height}:rate=15:duration={seconds}");
    let tone = format!("sine=frequency=440:duration={seconds}");
    let location = format!("location={VIDEO_LOCATION}");
    let model = format!("model={VIDEO_MODEL}");
    let mut encode: Vec<&str> = vec!["-v", "error", "-f", "lavfi", "-i", &source, "-f", "lavfi", "-i", &tone];
    encode.extend(["-c:v", encoder, "-pix_fmt", pix_fmt, "-c:a", "aac"]);
    if encoder == "libx265" {
        encode.extend(["-tag:v", "hvc1", "-x265-params", "log-level=error"]);
    }
    // Every tag written (make and model as QuickTime keys).
    encode.extend(["-metadata", &location, "-metadata", "make=Pocketphone", "-metadata", &model]);
    encode.extend(["-movflags", "use_metadata_tags", "-y", plain.to_str().unwrap()]);
    // ffmpeg 5 writes a rotation matrix only when it copies a stream.
    let copy = [
        "-v",
        "error",
        "-i",
        plain.to_str().unwrap(),
        "-map",
        "0",
        "-c",
        "copy",
        "-metadata:s:v:0",
        "rotate=90",
        "-metadata",
        "creation_time=2026-06-01T12:00:00Z",
        "-movflags",
        "use_metadata_tags",
        "-y",
        out.to_str().unwrap(),
    ];
    for args in [&encode[..], &copy[..]] {
        let status = std::process::Command::new("ffmpeg").args(args).status().expect("ffmpeg runs");
        assert!(status.success(), "ffmpeg {args:?}");
    }
    std::fs::read(out).unwrap()
}

/// What ffprobe reads in `bytes`: `-show_format -show_streams` as JSON.
pub fn ffprobe(bytes: &[u8]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("probed");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-print_format", "json", "-show_format", "-show_streams"])
        .arg(&path)
        .output()
        .expect("ffprobe runs");
    assert!(out.status.success(), "ffprobe: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The top-level boxes of an MP4/MOV file, in order (`ftyp`, `moov`, …).
pub fn top_level_boxes(bytes: &[u8]) -> Vec<String> {
    let mut boxes = Vec::new();
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let mut size = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as u64;
        let kind = String::from_utf8_lossy(&bytes[at + 4..at + 8]).into_owned();
        if size == 1 && at + 16 <= bytes.len() {
            size = u64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap());
        } else if size == 0 {
            size = (bytes.len() - at) as u64;
        }
        boxes.push(kind);
        if size < 8 {
            break;
        }
        at += size as usize;
    }
    boxes
}

/// Whether `needle` occurs in `bytes`.
pub fn contains(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// An HEIC photo made by libheif's own encoder (`heif-enc`) from a JPEG
/// of `image` with EXIF orientation `orientation` and a GPS position
/// ([`with_exif`]): heif-enc keeps the EXIF block in the HEIC and turns the
/// orientation into the image's `irot`/`imir` transformations.
pub fn heic(image: RgbImage, orientation: u16) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let (jpeg, out) = (dir.path().join("photo.jpg"), dir.path().join("photo.heic"));
    std::fs::write(&jpeg, with_exif(image, orientation)).unwrap();
    let status = std::process::Command::new("heif-enc")
        .args(["-q", "90", "-o"])
        .arg(&out)
        .arg(&jpeg)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("heif-enc runs (cargo xtask setup installs libheif-examples)");
    assert!(status.success(), "heif-enc");
    std::fs::read(out).unwrap()
}

/// A video made by ffmpeg with `encoder` into `container` (`webm`,
/// `ogg`), tagged with [`VIDEO_LOCATION`] (Matroska tags, Vorbis comments).
pub fn tagged_video(encoder: &str, container: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("clip.{container}"));
    let location = format!("location={VIDEO_LOCATION}");
    let status = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=1", "-c:v", encoder])
        .args(["-metadata", &location, "-y"])
        .arg(&out)
        .status()
        .expect("ffmpeg runs");
    assert!(status.success(), "ffmpeg {encoder} {container}");
    std::fs::read(out).unwrap()
}

/// A PNG of `image` with a `tEXt` chunk holding [`VIDEO_LOCATION`].
pub fn png_with_location(image: &RgbImage) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, image.width(), image.height());
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.add_text_chunk("Location".into(), VIDEO_LOCATION.into()).unwrap();
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(image.as_raw()).unwrap();
    writer.finish().unwrap();
    out
}
