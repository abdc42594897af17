//! A video's renditions, made by the field's own tools: `ffprobe` reads what
//! the file holds, `ffmpeg` takes a still from its first second (the
//! poster, turned upright by the rotation matrix, then made into the same
//! thumbnail and display JPEGs as a photo's) and writes the *shareable*
//! video: an MP4 of H.264 (and AAC, when there is sound), `faststart` (the
//! index before the data), at most 1080p, its bitrate capped, with every
//! metadata tag removed (the location atom, the device's make and model,
//! the creation time). Where the original is H.264 (and AAC) no larger than
//! 1080p already, its streams are copied, not encoded again.
//!
//! Both tools run as child processes: no shell, the arguments as a list, at
//! a lower CPU priority, under an address-space limit, killed when their
//! time is up or when the job is dropped (a shutdown). Their files live in
//! a directory of the job's own ([`Scratch`]), removed when the job ends,
//! whichever way it ends.
//!
//! A reason is a fixed sentence; what the tools printed goes to the log.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::process::Command;

use super::renditions::Unrenderable;
pub use super::tools::Scratch;
use super::tools::{self, RunError, run};

/// The content type of a shareable video.
pub const VIDEO_TYPE: &str = "video/mp4";
/// The long edge of a shareable video (1080p: 1920 × 1080, either way up).
pub const LONG_EDGE: u32 = 1920;
/// The short edge of a shareable video.
pub const SHORT_EDGE: u32 = 1080;
/// The only demuxers a guest's file is opened with (`-format_whitelist`):
/// MP4/MOV, Matroska/WebM and Ogg. Never a playlist (HLS, concat), whose
/// entries could name the server's own files or URLs, whatever the file's
/// declared type.
pub const DEMUXERS: &str = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,ogg";
/// What every run of a tool on a guest's file starts with: errors only,
/// and the file opened by [`DEMUXERS`] over the file protocol alone.
const GUARDED: [&str; 6] = ["-v", "error", "-protocol_whitelist", "file", "-format_whitelist", DEMUXERS];
/// The video bitrate a transcode is capped at (`-maxrate`), bits/s.
pub const MAX_VIDEO_BITRATE: u32 = 5_000_000;
/// Where the tools are, and how far each run of them may go.
#[derive(Clone, Debug)]
pub struct VideoTools {
    /// `ffmpeg`.
    pub ffmpeg: PathBuf,
    /// `ffprobe`.
    pub ffprobe: PathBuf,
    /// The first line of `ffmpeg -version` (logged, and told to the admin).
    pub version: String,
    /// How long one run of a tool may take before it is killed.
    pub timeout: Duration,
    /// The address space one run may take (`RLIMIT_AS`), bytes.
    pub memory: u64,
    /// Videos longer than this get a poster and no shareable video.
    pub max_duration: Duration,
    /// Where scratch directories are made.
    pub scratch: PathBuf,
}

/// The limits of a video job (the server's flags).
#[derive(Clone, Debug)]
pub struct VideoLimits {
    /// How long one run of a tool may take.
    pub timeout: Duration,
    /// The address space of one run, bytes.
    pub memory: u64,
    /// The longest video made shareable.
    pub max_duration: Duration,
    /// Where a job's scratch directory is made (the system's temporary
    /// directory when none).
    pub scratch: Option<PathBuf>,
}

impl VideoLimits {
    /// Where scratch directories are made: [`VideoLimits::scratch`], or the
    /// system's temporary directory.
    pub fn scratch_dir(&self) -> PathBuf {
        self.scratch.clone().unwrap_or_else(std::env::temp_dir)
    }
}

impl Default for VideoLimits {
    fn default() -> Self {
        VideoLimits {
            timeout: Duration::from_secs(20 * 60),
            memory: 2 << 30,
            max_duration: Duration::from_secs(10 * 60),
            scratch: None,
        }
    }
}

impl VideoTools {
    /// Finds `ffmpeg` and `ffprobe` (`program`s on the `PATH` or paths) and
    /// checks that both run; why not, in words for the log and the admin.
    pub async fn find(ffmpeg: &Path, ffprobe: &Path, limits: &VideoLimits) -> Result<VideoTools, String> {
        let mut version = String::new();
        for tool in [ffmpeg, ffprobe] {
            let out = Command::new(tool).arg("-version").stdin(Stdio::null()).kill_on_drop(true).output();
            let out = tokio::time::timeout(Duration::from_secs(10), out)
                .await
                .map_err(|_| format!("{} -version did not answer in 10 s", tool.display()))?
                .map_err(|e| format!("{} cannot be run: {e}", tool.display()))?;
            if !out.status.success() {
                return Err(format!("{} -version failed: {}", tool.display(), out.status));
            }
            if version.is_empty() {
                version = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_owned();
            }
        }
        let scratch = limits.scratch_dir();
        std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        tools::remove_abandoned_scratch(&scratch);
        Ok(VideoTools {
            ffmpeg: ffmpeg.to_owned(),
            ffprobe: ffprobe.to_owned(),
            version,
            timeout: limits.timeout,
            memory: limits.memory,
            max_duration: limits.max_duration,
            scratch,
        })
    }
}

/// What a video holds, as `ffprobe` reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// Its first video stream's codec (`h264`, `hevc`, `vp9`, …).
    pub video_codec: String,
    /// Its first audio stream's codec, if it has sound.
    pub audio_codec: Option<String>,
    /// Width as shown (after the rotation).
    pub width: u32,
    /// Height as shown (after the rotation).
    pub height: u32,
    /// Its duration.
    pub duration: Duration,
}

impl Probe {
    /// Whether its streams can go into the shareable MP4 as they are: H.264
    /// in 8-bit 4:2:0 (what every engine decodes), AAC or no sound, no
    /// larger than 1080p.
    pub fn copyable(&self, pix_fmt_ok: bool) -> bool {
        self.video_codec == "h264"
            && pix_fmt_ok
            && self.audio_codec.as_deref().is_none_or(|a| a == "aac")
            && self.width.max(self.height) <= LONG_EDGE
            && self.width.min(self.height) <= SHORT_EDGE
    }
}

#[derive(Deserialize)]
struct ProbeJson {
    #[serde(default)]
    streams: Vec<StreamJson>,
    format: Option<FormatJson>,
}

#[derive(Deserialize)]
struct StreamJson {
    codec_type: Option<String>,
    codec_name: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    pix_fmt: Option<String>,
    duration: Option<String>,
    #[serde(default)]
    side_data_list: Vec<SideDataJson>,
    #[serde(default)]
    tags: std::collections::HashMap<String, String>,
}

#[derive(Deserialize)]
struct SideDataJson {
    rotation: Option<f64>,
}

#[derive(Deserialize)]
struct FormatJson {
    duration: Option<String>,
}

/// Reads `ffprobe -print_format json` output: the first video and audio
/// streams, the size as shown, the duration; and whether the video's pixel
/// format is the one every engine decodes.
pub fn parse_probe(json: &[u8]) -> Result<(Probe, bool), Unrenderable> {
    let unreadable = |detail: String| Unrenderable { reason: "not a readable video file".into(), detail };
    let parsed: ProbeJson = serde_json::from_slice(json).map_err(|e| unreadable(e.to_string()))?;
    let video = parsed
        .streams
        .iter()
        .find(|s| s.codec_type.as_deref() == Some("video") && s.width.is_some_and(|w| w > 0))
        .ok_or_else(|| unreadable("no video stream".into()))?;
    let audio = parsed.streams.iter().find(|s| s.codec_type.as_deref() == Some("audio"));
    let rotation = video
        .side_data_list
        .iter()
        .find_map(|d| d.rotation)
        .or_else(|| video.tags.get("rotate").and_then(|r| r.parse().ok()))
        .unwrap_or(0.0);
    let quarter_turns = ((rotation / 90.0).round() as i64).rem_euclid(4);
    let (w, h) = (video.width.unwrap_or(0), video.height.unwrap_or(0));
    let (width, height) = if quarter_turns % 2 == 1 { (h, w) } else { (w, h) };
    let seconds = parsed
        .format
        .as_ref()
        .and_then(|f| f.duration.as_deref())
        .or(video.duration.as_deref())
        .and_then(|d| d.parse::<f64>().ok())
        .filter(|d| d.is_finite() && *d >= 0.0)
        .unwrap_or(0.0);
    let pix_fmt_ok = video.pix_fmt.as_deref() == Some("yuv420p");
    Ok((
        Probe {
            video_codec: video.codec_name.clone().unwrap_or_default(),
            audio_codec: audio.and_then(|a| a.codec_name.clone()),
            width,
            height,
            duration: Duration::from_secs_f64(seconds),
        },
        pix_fmt_ok,
    ))
}

/// Reads what the video at `input` holds.
pub async fn probe(tools: &VideoTools, input: &Path) -> Result<(Probe, bool), Unrenderable> {
    let dir = input.parent().unwrap_or(Path::new("/")).to_owned();
    let input = input.to_string_lossy();
    let json = run(
        &tools.ffprobe,
        &[&GUARDED[..], &["-print_format", "json", "-show_format", "-show_streams", "--", &input]].concat(),
        &dir,
        tools.timeout,
        tools.memory,
        tools.memory,
    )
    .await
    .map_err(|e| e.unrenderable("not a readable video file"))?;
    parse_probe(&json)
}

/// The poster's scale: no larger than the display rendition made of it,
/// never up (the PNG piped back stays small whatever the video's size).
const POSTER_FIT: &str = "scale=w='min(iw,1600)':h='min(ih,1600)':force_original_aspect_ratio=decrease";

/// A still of the video at `input` from its first second, upright, as PNG.
pub async fn poster(tools: &VideoTools, input: &Path, probe: &Probe) -> Result<Vec<u8>, Unrenderable> {
    // A second in, or the middle of a shorter video.
    let at = format!("{:.3}", (probe.duration.as_secs_f64() / 2.0).min(1.0));
    let dir = input.parent().unwrap_or(Path::new("/")).to_owned();
    let input = input.to_string_lossy();
    let png = run(
        &tools.ffmpeg,
        &[
            &["-nostdin"],
            &GUARDED[..],
            &[
                "-ss",
                &at,
                "-i",
                &input,
                "-map",
                "0:V:0",
                "-frames:v",
                "1",
                "-an",
                "-sn",
                "-vf",
                POSTER_FIT,
                "-map_metadata",
                "-1",
                "-f",
                "image2pipe",
                "-c:v",
                "png",
                "-",
            ][..],
        ]
        .concat(),
        &dir,
        tools.timeout,
        tools.memory,
        tools.memory,
    )
    .await
    .map_err(|e| e.unrenderable("no still could be taken from this video"))?;
    if png.is_empty() {
        return Err(Unrenderable {
            reason: "no still could be taken from this video".into(),
            detail: "ffmpeg wrote no frame".into(),
        });
    }
    Ok(png)
}

/// The arguments that make the shareable MP4 of `input` at `output`.
pub fn shareable_args(input: &str, output: &str, probe: &Probe, copy: bool, bound: OutputBound) -> Vec<String> {
    let mut args: Vec<String> = ["-nostdin"]
        .iter()
        .chain(&GUARDED)
        .chain(&["-i", input, "-map", "0:V:0", "-map", "0:a:0?"])
        .map(|s| (*s).to_owned())
        .collect();
    // Bounded whatever the file's own metadata says of its length: ffmpeg
    // stops writing at the longest a video may be, or at the size.
    args.extend(["-t".to_owned(), bound.seconds.to_string(), "-fs".to_owned(), bound.bytes.to_string()]);
    if copy {
        // The streams as they are, but for the H.264 SEI messages, where
        // some cameras write their own data (GPS included).
        args.extend(["-c", "copy", "-bsf:v", "filter_units=remove_types=6"].map(String::from));
    } else {
        // Upright first (ffmpeg applies the rotation matrix when it
        // decodes), then scaled down to fit 1080p either way up, to even
        // sizes; never up.
        let (long, short) = (LONG_EDGE, SHORT_EDGE);
        let fit = if probe.width >= probe.height {
            format!("scale=w='trunc(min(iw,min({long},{short}*iw/ih))/2)*2':h=-2")
        } else {
            format!("scale=w=-2:h='trunc(min(ih,min({long},{short}*ih/iw))/2)*2'")
        };
        let rate = MAX_VIDEO_BITRATE.to_string();
        let buffer = (2 * MAX_VIDEO_BITRATE).to_string();
        args.extend(
            [
                "-vf",
                &fit,
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-crf",
                "23",
                "-maxrate",
                &rate,
                "-bufsize",
                &buffer,
                "-pix_fmt",
                "yuv420p",
                "-profile:v",
                "high",
            ]
            .map(String::from),
        );
        if probe.audio_codec.as_deref() == Some("aac") {
            args.extend(["-c:a", "copy"].map(String::from));
        } else {
            args.extend(["-c:a", "aac", "-b:a", "128k"].map(String::from));
        }
    }
    args.extend(
        [
            // No tag of the original's (global, stream or chapter), no
            // chapters, no encoder name, no creation time.
            "-map_metadata",
            "-1",
            "-map_metadata:s",
            "-1",
            "-map_chapters",
            "-1",
            "-fflags",
            "+bitexact",
            "-flags:v",
            "+bitexact",
            "-flags:a",
            "+bitexact",
            "-sn",
            "-dn",
            "-movflags",
            "+faststart",
            "-f",
            "mp4",
            "--",
            output,
        ]
        .map(String::from),
    );
    args
}

/// The most a shareable copy may be, whatever its original claims: its
/// length (`--video-max-duration`) and its size in bytes.
#[derive(Clone, Copy, Debug)]
pub struct OutputBound {
    /// Seconds.
    pub seconds: u64,
    /// Bytes.
    pub bytes: u64,
}

/// Writes the shareable MP4 of the video at `input` to `output`.
pub async fn shareable(
    tools: &VideoTools,
    input: &Path,
    output: &Path,
    probe: &Probe,
    copy: bool,
) -> Result<(), Unrenderable> {
    // A copy is at most its original's streams; a transcode at most its
    // bitrate cap: twice the original, and never less than the memory
    // limit, is room for either, and bounds a file whose metadata lies.
    let original = tokio::fs::metadata(input).await.map(|m| m.len()).unwrap_or(0);
    let bytes = original.saturating_mul(2).saturating_add(64 << 20).max(tools.memory);
    let bound = OutputBound { seconds: tools.max_duration.as_secs().max(1), bytes };
    let args = shareable_args(&input.to_string_lossy(), &output.to_string_lossy(), probe, copy, bound);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dir = output.parent().unwrap_or(Path::new("/"));
    // The file limit above ffmpeg's own (-fs stops it cleanly first; the
    // moov atom moved to the front by +faststart needs a little more).
    run(&tools.ffmpeg, &args, dir, tools.timeout, tools.memory, bytes.saturating_add(bytes / 8))
        .await
        .map(drop)
        .map_err(|e: RunError| e.unrenderable("this video could not be made playable for the wall"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotated_phone_video_is_shown_portrait() {
        let json = br#"{"streams":[{"codec_type":"video","codec_name":"hevc","width":1920,"height":1080,
            "pix_fmt":"yuv420p10le","side_data_list":[{"side_data_type":"Display Matrix","rotation":-90}]},
            {"codec_type":"audio","codec_name":"aac"}],"format":{"duration":"12.500000"}}"#;
        let (probe, pix_ok) = parse_probe(json).unwrap();
        assert_eq!((probe.width, probe.height), (1080, 1920));
        assert_eq!(probe.duration, Duration::from_millis(12_500));
        assert!(!pix_ok);
        assert!(!probe.copyable(pix_ok), "HEVC is encoded again");
    }

    #[test]
    fn h264_aac_up_to_1080p_is_copied_and_larger_is_not() {
        let probe = |w, h, audio: Option<&str>| Probe {
            video_codec: "h264".into(),
            audio_codec: audio.map(String::from),
            width: w,
            height: h,
            duration: Duration::from_secs(3),
        };
        assert!(probe(1080, 1920, Some("aac")).copyable(true));
        assert!(probe(1920, 1080, None).copyable(true));
        assert!(!probe(3840, 2160, Some("aac")).copyable(true));
        assert!(!probe(1920, 1080, Some("opus")).copyable(true));
    }

    #[test]
    fn a_file_without_a_video_stream_is_not_a_video() {
        let json = br#"{"streams":[{"codec_type":"audio","codec_name":"mp3"}],"format":{"duration":"3"}}"#;
        assert_eq!(parse_probe(json).unwrap_err().reason, "not a readable video file");
    }

    #[test]
    fn every_metadata_tag_is_dropped_and_the_index_goes_first() {
        let probe =
            Probe { video_codec: "hevc".into(), audio_codec: None, width: 640, height: 480, duration: Duration::ZERO };
        for copy in [true, false] {
            let args = shareable_args("in", "out.mp4", &probe, copy, OutputBound { seconds: 600, bytes: 1 << 30 });
            let args = args.join(" ");
            assert!(args.contains("-map_metadata -1"), "{args}");
            assert!(args.contains("-t 600 -fs 1073741824"), "output bounded whatever the file says: {args}");
            assert!(args.contains("-movflags +faststart"), "{args}");
            assert!(args.ends_with("-- out.mp4"), "{args}");
        }
    }
}
