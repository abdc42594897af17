//! A photo's display renditions: decoded (JPEG, PNG, WebP or GIF, its first
//! frame), turned upright by its EXIF orientation, scaled down to fit
//! [`DISPLAY_EDGE`] and [`THUMB_EDGE`] on the long edge (never up), and
//! encoded as baseline JPEG. The encoder writes a JFIF header and the
//! pixels only: no EXIF (so no GPS position, camera or time), no XMP, no
//! ICC profile, no comment. Transparency is laid on white.
//!
//! Decoding is bounded ([`MAX_SOURCE_BYTES`], [`MAX_DECODE_BYTES`],
//! [`MAX_EDGE`], and [`MAX_PIXELS`] read from the header before a pixel is
//! decoded), so a decompression bomb fails like a corrupt file: with a
//! reason, and the placeholder in its place.
//!
//! A reason is one of a few fixed sentences: the decoder's own text goes to
//! the log, never to a placeholder the wall shows.

use std::io::Cursor;
use std::sync::OnceLock;

use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits, Rgb, RgbImage};

/// The thumbnail's long edge.
pub const THUMB_EDGE: u32 = 400;
/// The display rendition's long edge.
pub const DISPLAY_EDGE: u32 = 1600;
/// The largest original decoded (bigger ones get the placeholder).
pub const MAX_SOURCE_BYTES: u64 = 64 << 20;
/// The most memory one decode may take.
pub const MAX_DECODE_BYTES: u64 = 256 << 20;
/// The longest edge decoded.
pub const MAX_EDGE: u32 = 20_000;
/// The most pixels decoded: a 50 MP phone photo (8160 × 6120), not an
/// 8000 × 8000 PNG of a few KB. Read from the header, before decoding.
pub const MAX_PIXELS: u64 = 50_000_000;
/// JPEG quality of the display rendition and the thumbnail.
const QUALITY: u8 = 82;
/// The content type of every rendition.
pub const RENDITION_TYPE: &str = "image/jpeg";
/// The placeholder's content type.
pub const PLACEHOLDER_TYPE: &str = "image/png";

/// The decoder for a content type, if photos of that type are decoded.
pub fn decodable(content_type: &str) -> Option<ImageFormat> {
    match content_type {
        "image/jpeg" | "image/jpg" | "image/pjpeg" => Some(ImageFormat::Jpeg),
        "image/png" => Some(ImageFormat::Png),
        "image/webp" => Some(ImageFormat::WebP),
        "image/gif" => Some(ImageFormat::Gif),
        _ => None,
    }
}

/// The two renditions of one photo.
#[derive(Clone, Debug)]
pub struct Renditions {
    /// The display rendition (JPEG).
    pub display: Vec<u8>,
    /// The thumbnail (JPEG).
    pub thumb: Vec<u8>,
    /// The display rendition's width.
    pub width: u32,
    /// The display rendition's height.
    pub height: u32,
}

/// Why a photo has no rendition: a fixed sentence for the wall and the
/// host, and the decoder's detail for the log only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unrenderable {
    /// What the wall and the host are told.
    pub reason: String,
    /// The decoder's own words (logged, never shown).
    pub detail: String,
}

impl Unrenderable {
    fn unreadable(what: &str, detail: impl std::fmt::Display) -> Unrenderable {
        Unrenderable { reason: format!("not a readable {what} file"), detail: detail.to_string() }
    }
}

/// A photo's header, read without decoding a pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
}

impl Header {
    /// Width × height.
    pub fn pixels(self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    limits.max_image_width = Some(MAX_EDGE);
    limits.max_image_height = Some(MAX_EDGE);
    reader.limits(limits);
    reader
}

fn what(format: ImageFormat) -> String {
    format.extensions_str().first().copied().unwrap_or("image").to_uppercase()
}

/// Reads the size from the header; refuses a photo of more than
/// [`MAX_PIXELS`] before anything is decoded.
pub fn header(bytes: &[u8], format: ImageFormat) -> Result<Header, Unrenderable> {
    let what = what(format);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    // The header alone: no edge limit here, so that a 20,000-px photo is
    // refused for its pixels, with that reason.
    reader.no_limits();
    let (width, height) = reader.into_dimensions().map_err(|e| Unrenderable::unreadable(&what, e))?;
    within_limits(width, height)
}

/// A photo of `width` × `height`, as its header says; refused when it has
/// more than [`MAX_PIXELS`] or an edge longer than a decode takes.
pub fn within_limits(width: u32, height: u32) -> Result<Header, Unrenderable> {
    let header = Header { width, height };
    if header.pixels() > MAX_PIXELS || width.max(height) > MAX_EDGE {
        return Err(Unrenderable {
            reason: format!("larger than the {} megapixels a photo is decoded from", MAX_PIXELS / 1_000_000),
            detail: format!("{width} × {height} px"),
        });
    }
    Ok(header)
}

/// Decodes `bytes` as `format` and makes both renditions; why not, when
/// the file cannot be decoded. The header is checked first ([`header`]).
pub fn make(bytes: &[u8], format: ImageFormat) -> Result<Renditions, Unrenderable> {
    header(bytes, format)?;
    let what = what(format);
    let mut decoder = reader(bytes, format).into_decoder().map_err(|e| Unrenderable::unreadable(&what, e))?;
    // An unreadable EXIF block is not worth refusing the photo for.
    let orientation = decoder.orientation().unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder).map_err(|e| Unrenderable::unreadable(&what, e))?;
    image.apply_orientation(orientation);
    let display = flatten(fit(image, DISPLAY_EDGE));
    let thumb = flatten(fit(DynamicImage::ImageRgb8(display.clone()), THUMB_EDGE));
    Ok(Renditions { width: display.width(), height: display.height(), display: jpeg(&display)?, thumb: jpeg(&thumb)? })
}

/// Scales down to fit `edge` on the long side; smaller images stay as they are.
fn fit(image: DynamicImage, edge: u32) -> DynamicImage {
    if image.width().max(image.height()) <= edge {
        return image;
    }
    image.resize(edge, edge, FilterType::Triangle)
}

/// Three 8-bit channels, any transparency laid on white.
fn flatten(image: DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.into_rgb8();
    }
    let rgba = image.into_rgba8();
    let mut rgb = RgbImage::new(rgba.width(), rgba.height());
    for (out, px) in rgb.pixels_mut().zip(rgba.pixels()) {
        let a = u16::from(px[3]);
        let over = |c: u8| ((u16::from(c) * a + 255 * (255 - a) + 127) / 255) as u8;
        *out = Rgb([over(px[0]), over(px[1]), over(px[2])]);
    }
    rgb
}

fn jpeg(image: &RgbImage) -> Result<Vec<u8>, Unrenderable> {
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, QUALITY)
        .encode_image(image)
        .map_err(|e| Unrenderable { reason: "the rendition could not be encoded".into(), detail: e.to_string() })?;
    Ok(out)
}

/// The placeholder served for a file that has no rendition: a plain light
/// grey 4:3 PNG (the page says why, from the reason it is given).
pub fn placeholder() -> &'static [u8] {
    static PLACEHOLDER: OnceLock<Vec<u8>> = OnceLock::new();
    PLACEHOLDER.get_or_init(|| {
        let image = RgbImage::from_pixel(400, 300, Rgb([0xdd, 0xdd, 0xdd]));
        let mut out = Cursor::new(Vec::new());
        // Writing a small PNG to memory cannot fail.
        let _ = DynamicImage::ImageRgb8(image).write_to(&mut out, ImageFormat::Png);
        out.into_inner()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_large_photo_is_scaled_to_both_edges_keeping_its_shape() {
        let photo = DynamicImage::ImageRgb8(RgbImage::from_pixel(3200, 2400, Rgb([10, 200, 30])));
        let made = make(&encoded(photo, ImageFormat::Png), ImageFormat::Png).unwrap();
        assert_eq!((made.width, made.height), (1600, 1200));
        let thumb = image::load_from_memory(&made.thumb).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (400, 300));
    }

    #[test]
    fn a_small_photo_is_not_scaled_up() {
        let photo = DynamicImage::ImageRgb8(RgbImage::from_pixel(120, 80, Rgb([0, 0, 0])));
        let made = make(&encoded(photo, ImageFormat::Png), ImageFormat::Png).unwrap();
        assert_eq!((made.width, made.height), (120, 80));
    }

    #[test]
    fn transparency_is_laid_on_white() {
        let photo = DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(8, 8, image::Rgba([0, 0, 0, 0])));
        let made = make(&encoded(photo, ImageFormat::Png), ImageFormat::Png).unwrap();
        let px = image::load_from_memory(&made.display).unwrap().to_rgb8().get_pixel(4, 4).0;
        assert!(px.iter().all(|&c| c > 245), "{px:?}");
    }

    #[test]
    fn garbage_gives_a_reason() {
        let why = make(b"\xff\xd8\xff\xe0 not really a jpeg", ImageFormat::Jpeg).unwrap_err();
        assert_eq!(why.reason, "not a readable JPG file");
        assert!(!why.detail.is_empty());
    }

    #[test]
    fn the_placeholder_is_a_png() {
        assert_eq!(image::guess_format(placeholder()).unwrap(), ImageFormat::Png);
    }
}
