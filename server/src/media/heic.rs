//! HEIC and HEIF photos (an iPhone's, AirDropped or exported): decoded by
//! libheif's own `heif-convert` run as a child process ([`super::tools`]),
//! which applies the image's transformations (`irot`, `imir`, `clap`), so
//! the PNG it writes is upright, and takes the primary image of a file that
//! holds several (a burst, a depth map, a thumbnail). 10-bit HDR images come
//! out as 16-bit PNG. That PNG is then made into the same thumbnail and
//! display JPEGs as any photo ([`super::renditions::make`]), with no
//! metadata.
//!
//! Before the decode, `heif-info` (the same package's) reads the primary
//! image's size from the file's boxes (`pitm` names the primary item, its
//! `ispe` property the size): a file claiming more pixels than a photo is
//! decoded from is refused before a pixel is decoded, and the pixels count
//! against its guest's rendition budget before the decode, as a JPEG's do.
//!
//! A child process rather than the `libheif-rs` crate: the crate needs
//! libheif 1.17 or newer (its `v1_17` floor), and Debian 12 ships 1.15.1;
//! its `embedded-libheif` alternative compiles libheif from source (C++,
//! CMake) in every clean build of a 2-core machine. A child process also
//! keeps a decoder crash or a decompression bomb out of the server's own
//! memory: it runs under the same time and address-space limits as ffmpeg.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::renditions::{Header, MAX_PIXELS, Unrenderable, within_limits};
use super::tools::{RunError, Scratch, run};

/// The largest PNG read back: 50 megapixels of 16-bit RGBA, uncompressed.
const MAX_PNG_BYTES: u64 = MAX_PIXELS * 8 + (1 << 20);

/// The content types decoded here.
pub fn is_heif(content_type: &str) -> bool {
    matches!(content_type, "image/heic" | "image/heif" | "image/heic-sequence" | "image/heif-sequence")
}

/// `heif-convert` and `heif-info`, found and checked at start.
#[derive(Clone, Debug)]
pub struct HeicTools {
    /// The decoder.
    pub heif_convert: PathBuf,
    /// The reader of the boxes (the primary image's size), beside it.
    pub heif_info: PathBuf,
    /// The libheif version it reports (logged, and told to the admin).
    pub version: String,
}

impl HeicTools {
    /// Finds `program` (`heif-convert`, on the `PATH` or a path) and
    /// `heif-info` beside it, and checks that both run; why not, in words
    /// for the log and the admin.
    pub async fn find(program: &Path) -> Result<HeicTools, String> {
        let text = help_of(program).await?;
        let version = text.lines().map(str::trim).find(|l| l.contains("libheif")).unwrap_or("").to_owned();
        let heif_info = match program.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join("heif-info"),
            _ => PathBuf::from("heif-info"),
        };
        help_of(&heif_info).await?;
        Ok(HeicTools { heif_convert: program.to_owned(), heif_info, version })
    }
}

/// What `program --help` says, if it runs.
async fn help_of(program: &Path) -> Result<String, String> {
    let out = Command::new(program).arg("--help").stdin(Stdio::null()).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(10), out)
        .await
        .map_err(|_| format!("{} --help did not answer in 10 s", program.display()))?
        .map_err(|e| format!("{} cannot be run: {e}", program.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// The primary image of an HEIC/HEIF file, as its boxes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Primary {
    /// Its size.
    pub header: Header,
    /// Its place among the file's top-level images (0 for the first), the
    /// order heif-convert writes them in: the primary one (`pitm`) need
    /// not be the first.
    pub index: usize,
    /// The pixels of every top-level image together: heif-convert decodes
    /// them all, so they are what is counted against the guest's budget.
    pub decoded_pixels: u64,
}

/// The directory a tool reading `input` runs in: the input's (its job's
/// scratch directory).
fn input_dir(input: &Path) -> std::path::PathBuf {
    input.parent().map_or_else(|| std::path::PathBuf::from("/"), Path::to_owned)
}

/// The primary image of the HEIC/HEIF file at `input`, read from its boxes
/// by `heif-info` without a decode; refused when it has more pixels than a
/// photo is decoded from.
pub async fn primary(tools: &HeicTools, input: &Path, timeout: Duration, memory: u64) -> Result<Primary, Unrenderable> {
    let dir = input_dir(input);
    let input = input.to_string_lossy();
    let out = run(&tools.heif_info, &[&input], &dir, timeout, memory, memory)
        .await
        .map_err(|e: RunError| e.unrenderable("not a readable HEIC file"))?;
    let text = String::from_utf8_lossy(&out);
    let (index, width, height) = primary_in(&text).ok_or_else(|| Unrenderable {
        reason: "not a readable HEIC file".into(),
        detail: "heif-info named no primary image".into(),
    })?;
    let header = within_limits(width, height)?;
    // heif-convert decodes every top-level image, not the primary alone:
    // all of them are what the decode costs.
    let decoded_pixels = all_pixels_in(&text).ok_or_else(|| Unrenderable {
        reason: "not a readable HEIC file".into(),
        detail: "heif-info listed an image without a size".into(),
    })?;
    if decoded_pixels > MAX_PIXELS {
        return Err(Unrenderable {
            reason: format!("larger than the {} megapixels a photo is decoded from", MAX_PIXELS / 1_000_000),
            detail: format!("{decoded_pixels} pixels in its top-level images together"),
        });
    }
    Ok(Primary { header, index, decoded_pixels })
}

/// The size of a top-level image line of `heif-info`
/// (`image: 4032x3024 (id=49), primary`).
fn size_of(line: &str) -> Option<(u32, u32)> {
    let size = line.strip_prefix("image:")?.split_whitespace().next()?;
    let (width, height) = size.split_once('x')?;
    Some((width.parse().ok()?, height.parse().ok()?))
}

/// The primary image in what `heif-info` printed, a line per top-level
/// image: its place among them and its size.
fn primary_in(text: &str) -> Option<(usize, u32, u32)> {
    let images = text.lines().map(str::trim).filter(|l| l.starts_with("image:"));
    let (index, line) = images.enumerate().find(|(_, l)| l.ends_with(", primary"))?;
    let (width, height) = size_of(line)?;
    Some((index, width, height))
}

/// The pixels of every top-level image together (what heif-convert
/// decodes); `None` when a line has no size.
fn all_pixels_in(text: &str) -> Option<u64> {
    let images = text.lines().map(str::trim).filter(|l| l.starts_with("image:"));
    images
        .map(|line| size_of(line).map(|(w, h)| u64::from(w) * u64::from(h)))
        .try_fold(0u64, |sum, pixels| sum.checked_add(pixels?))
}

/// Decodes the HEIC/HEIF file at `input` into an upright PNG of its
/// `primary` image, in `scratch`.
pub async fn to_png(
    tools: &HeicTools,
    input: &Path,
    primary: Primary,
    scratch: &Scratch,
    timeout: Duration,
    memory: u64,
) -> Result<Vec<u8>, Unrenderable> {
    let output = scratch.path("decoded.png");
    let (input, out) = (input.to_string_lossy(), output.to_string_lossy());
    run(&tools.heif_convert, &["--quiet", &input, &out], scratch.dir(), timeout, memory, memory)
        .await
        .map_err(|e: RunError| e.unrenderable("not a readable HEIC file"))?;
    // A file of several top-level images is written as decoded-1.png, …,
    // in the order heif-info listed them.
    for candidate in [output.clone(), scratch.path(&format!("decoded-{}.png", primary.index + 1))] {
        let Ok(meta) = tokio::fs::metadata(&candidate).await else { continue };
        // A PNG this large holds more pixels than a photo is decoded from.
        if meta.len() > MAX_PNG_BYTES {
            return Err(Unrenderable {
                reason: format!("larger than the {} megapixels a photo is decoded from", MAX_PIXELS / 1_000_000),
                detail: format!("heif-convert wrote {} bytes", meta.len()),
            });
        }
        if let Ok(png) = tokio::fs::read(&candidate).await {
            return Ok(png);
        }
    }
    Err(Unrenderable { reason: "not a readable HEIC file".into(), detail: "heif-convert wrote no image".into() })
}

#[cfg(test)]
mod tests {
    use super::{all_pixels_in, primary_in};

    #[test]
    fn the_primary_image_is_the_one_heif_info_marks() {
        let burst = "MIME type: image/heic\nmain brand: heic\n\nimage: 512x512 (id=1)\n  color profile: no\n\
                     image: 4032x3024 (id=49), primary\n  color profile: nclx\n  depth channel: no\n";
        assert_eq!(primary_in(burst), Some((1, 4032, 3024)), "the second top-level image");
        assert_eq!(primary_in("image: 320x240 (id=1), primary\n  thumbnail: 16x8\n"), Some((0, 320, 240)));
        assert_eq!(primary_in("image: 320x240 (id=1)\n"), None, "no image marked primary");
        assert_eq!(primary_in("image: 99999999999x2 (id=1), primary\n"), None, "no size past u32");
    }

    #[test]
    fn every_top_level_image_is_counted() {
        let burst =
            "image: 512x512 (id=1)\n  thumbnail: 16x8\nimage: 4032x3024 (id=49), primary\nimage: 4032x3024 (id=50)\n";
        assert_eq!(all_pixels_in(burst), Some(512 * 512 + 2 * 4032 * 3024), "thumbnails are not top-level");
        assert_eq!(all_pixels_in("image: ?x? (id=1), primary\n"), None);
    }
}
