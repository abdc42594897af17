//! Helpers of the media tests (renditions, ranges, the live wall, the ZIP):
//! uploads of any type, photos with EXIF, the host's calls.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use reqwest::StatusCode;
use serde_json::{Value, json};
use upload_once_core::wire::{AttemptResponse, Media};
use uuid::Uuid;

use super::{ADMIN, Guest, TestServer};

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
