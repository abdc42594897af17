//! An iPhone's HEIC photo gets the same renditions as a JPEG: decoded by
//! libheif (heif-convert), upright per its transformations, scaled, and
//! written with no metadata, so its GPS position never leaves the server;
//! the host alone gets the original.

use std::time::Duration;

use crate::support;

use reqwest::StatusCode;
use support::TestServer;
use support::media::{
    RED, WHITE, assert_turned_clockwise, encoded, get_once_made, has_exif, heic, host_list, near, open_event,
    quadrants, upload_as, wall_item,
};

#[tokio::test]
async fn a_rotated_heic_photo_with_a_location_reaches_the_wall_upright_and_without_exif() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    // Stored landscape, 64 × 32, with "rotate 90° clockwise to show" (6).
    let original = heic(quadrants(64, 32), 6);
    assert_eq!(&original[4..8], b"ftyp", "an ISO media file");
    assert!(has_exif(&original), "the fixture carries its EXIF block, GPS and all");
    let media = upload_as(&guest, "image/heic", "IMG_0001.HEIC", &original).await;

    let item = &wall_item(&guest, media.id).await;
    for url in [item["url"].as_str().unwrap(), item["thumb_url"].as_str().unwrap()] {
        let r = get_once_made(&server, url, Duration::from_secs(60)).await;
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

/// `heif-enc` run over `inputs` (files in `dir`): one HEIC holding each as
/// a top-level image, the first marked primary, each with a thumbnail.
fn heif_enc(dir: &std::path::Path, inputs: &[&str]) -> Vec<u8> {
    let out = dir.join("out.heic");
    let status = std::process::Command::new("heif-enc")
        .current_dir(dir)
        .args(["-q", "90", "-t", "16", "-o"])
        .arg(&out)
        .args(inputs)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("heif-enc runs (cargo xtask setup installs libheif-examples)");
    assert!(status.success(), "heif-enc");
    std::fs::read(out).unwrap()
}

/// What `heif-info` says of a HEIC file.
fn heif_info(dir: &std::path::Path, bytes: &[u8]) -> String {
    let path = dir.join("probe.heic");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("heif-info").arg(&path).output().expect("heif-info runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The display rendition of `id`, once made.
async fn display_of(guest: &support::Guest<'_>, id: uuid::Uuid) -> image::RgbImage {
    let item = wall_item(guest, id).await;
    assert!(item["placeholder"].is_null(), "a rendition, not the placeholder: {item}");
    let r = guest.server.http.get(item["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/jpeg");
    image::load_from_memory(&r.bytes().await.unwrap()).unwrap().to_rgb8()
}

/// A file of several top-level images (a burst; here two, each with a
/// thumbnail) is shown as the one its `pitm` box names primary, which need
/// not be the first; and a 10-bit photo (an iPhone's HDR) is shown like an
/// 8-bit one.
#[tokio::test]
async fn the_primary_image_of_several_is_shown_and_a_ten_bit_photo_like_any_other() {
    let (server, _workers) = TestServer::start_rendering().await;
    let guest = open_event(&server).await;
    let dir = tempfile::tempdir().unwrap();

    // Two images: 64 × 32, then 32 × 48. The second is made the primary one.
    std::fs::write(dir.path().join("a.png"), encoded(quadrants(64, 32), image::ImageFormat::Png)).unwrap();
    std::fs::write(dir.path().join("b.png"), encoded(quadrants(32, 48), image::ImageFormat::Png)).unwrap();
    let mut burst = heif_enc(dir.path(), &["a.png", "b.png"]);
    let info = heif_info(dir.path(), &burst);
    let second: u16 = info
        .lines()
        .find_map(|l| l.strip_prefix("image: 32x48 (id=")?.split(')').next()?.parse().ok())
        .unwrap_or_else(|| panic!("the second image's id: {info}"));
    let pitm = burst.windows(4).position(|w| w == b"pitm").expect("a primary item box") + 8;
    burst[pitm..pitm + 2].copy_from_slice(&second.to_be_bytes());
    let info = heif_info(dir.path(), &burst);
    assert!(info.contains(&format!("image: 32x48 (id={second}), primary")), "the fixture: {info}");
    let media = upload_as(&guest, "image/heic", "IMG_0005.HEIC", &burst).await;
    let shown = display_of(&guest, media.id).await;
    assert_eq!((shown.width(), shown.height()), (32, 48), "the primary image, not the first");

    // A 16-bit PNG made into a 10-bit HEIC (heif-enc's default for it).
    let deep = image::DynamicImage::ImageRgb8(quadrants(64, 32)).into_rgb16();
    deep.save(dir.path().join("deep.png")).unwrap();
    let hdr = heif_enc(dir.path(), &["deep.png"]);
    // The fixture is deep: libheif decodes it to a 16-bit PNG.
    std::fs::write(dir.path().join("deep.heic"), &hdr).unwrap();
    let status = std::process::Command::new("heif-convert")
        .current_dir(dir.path())
        .args(["--quiet", "deep.heic", "decoded.png"])
        .status()
        .expect("heif-convert runs");
    assert!(status.success());
    let decoded = image::open(dir.path().join("decoded.png")).unwrap();
    assert_eq!(decoded.color(), image::ColorType::Rgb16, "a 10-bit fixture");
    let media = upload_as(&guest, "image/heic", "IMG_0006.HEIC", &hdr).await;
    let shown = display_of(&guest, media.id).await;
    assert_eq!((shown.width(), shown.height()), (64, 32));
    assert!(near(shown.get_pixel(8, 8).0, RED) && near(shown.get_pixel(56, 24).0, WHITE), "its colours");
}
