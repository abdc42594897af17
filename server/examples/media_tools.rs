//! Times the server's own video and HEIC work on fixtures made here by the
//! tools themselves (docs/benchmarks.md, "Video and HEIC renditions"):
//! for one minute of 1080p30 H.264 and of 1080p30 HEVC, the probe, the
//! poster and the shareable MP4 (copied for H.264, encoded for HEVC); for a
//! 12 MP HEIC photo, its decode by heif-convert and its two JPEG
//! renditions. Each step runs in a process of its own (this example run
//! again with the step's name), so that the peak resident memory of its
//! tool (`getrusage(RUSAGE_CHILDREN)`) is that step's alone.
//!
//! `cargo run -q -p upload-once-server --example media_tools`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use upload_once_server::media::heic::{self, HeicTools};
use upload_once_server::media::renditions;
use upload_once_server::media::tools::Scratch;
use upload_once_server::media::video::{self, VideoLimits, VideoTools};

/// The largest resident set of the children waited for, MiB.
fn peak_child_mib() -> f64 {
    // SAFETY: getrusage writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn ffmpeg(args: &[&str]) {
    let status = Command::new("ffmpeg").args(args).status().expect("ffmpeg");
    assert!(status.success(), "ffmpeg {args:?}");
}

fn limits() -> VideoLimits {
    VideoLimits { timeout: Duration::from_secs(1800), ..VideoLimits::default() }
}

/// One step on `input`, in this process: what it made.
async fn step(name: &str, input: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let scratch = Scratch::new(dir.path()).unwrap();
    let tools = VideoTools::find(Path::new("ffmpeg"), Path::new("ffprobe"), &limits()).await.unwrap();
    match name {
        "probe" => format!("{:?}", video::probe(&tools, input).await.unwrap().0),
        "poster" => {
            let (probe, _) = video::probe(&tools, input).await.unwrap();
            let png = video::poster(&tools, input, &probe).await.unwrap();
            let stills = renditions::make(&png, image::ImageFormat::Png).unwrap();
            format!("still + two JPEGs, display {} × {}", stills.width, stills.height)
        }
        "shareable" => {
            let (probe, plain) = video::probe(&tools, input).await.unwrap();
            let output = scratch.path("shareable.mp4");
            let copy = probe.copyable(plain);
            video::shareable(&tools, input, &output, &probe, copy).await.unwrap();
            let how = if copy { "copied" } else { "encoded to H.264" };
            format!("{how}, {} MB", std::fs::metadata(&output).unwrap().len() / 1_000_000)
        }
        "heic" => {
            let tools = HeicTools::find(Path::new("heif-convert")).await.unwrap();
            let primary = heic::primary(&tools, input, limits().timeout, limits().memory).await.unwrap();
            let png = heic::to_png(&tools, input, primary, &scratch, limits().timeout, limits().memory).await.unwrap();
            let started = Instant::now();
            let made = renditions::make(&png, image::ImageFormat::Png).unwrap();
            format!(
                "decoded to a {} MB PNG, then the two JPEGs ({} × {}) in {:.2} s in the server's process",
                png.len() / 1_000_000,
                made.width,
                made.height,
                started.elapsed().as_secs_f64()
            )
        }
        other => panic!("no step {other}"),
    }
}

/// Runs `name` on `input` in a process of its own; its row.
fn row(what: &str, name: &str, input: &Path) {
    let started = Instant::now();
    let out = Command::new(std::env::current_exe().unwrap()).arg(name).arg(input).output().unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let (made, peak) = text.trim().rsplit_once('\t').unwrap();
    println!("| {what}: {name} | {:.2} s | {peak} MiB | {made} |", started.elapsed().as_secs_f64());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [name, input] = args.as_slice() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let made = runtime.block_on(step(name, Path::new(input)));
        println!("{made}\t{:.0}", peak_child_mib());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let version = Command::new("ffmpeg").arg("-version").output().unwrap();
    println!("{}\n", String::from_utf8_lossy(&version.stdout).lines().next().unwrap_or(""));
    println!("| media: step | time | peak memory of its tool | what it made |\n|---|---|---|---|");
    let source = "testsrc2=size=1920x1080:rate=30:duration=60";
    for (name, encoder) in [("H.264", "libx264"), ("HEVC", "libx265")] {
        let input: PathBuf = dir.path().join(format!("{encoder}.mp4"));
        let input_str = input.to_str().unwrap();
        let mut args = vec!["-v", "error", "-f", "lavfi", "-i", source, "-f", "lavfi", "-i", "sine=duration=60"];
        args.extend(["-c:v", encoder, "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-b:v", "12M"]);
        if encoder == "libx265" {
            args.extend(["-x265-params", "log-level=error"]);
        }
        args.extend(["-c:a", "aac", "-y", input_str]);
        ffmpeg(&args);
        let size = std::fs::metadata(&input).unwrap().len() / 1_000_000;
        let what = format!("60 s of 1080p30 {name} ({size} MB)");
        for step in ["probe", "poster", "shareable"] {
            row(&what, step, &input);
        }
    }
    // A 12 MP photo (4032 × 3024, an iPhone's), as HEIC.
    let png = dir.path().join("photo.png");
    ffmpeg(&[
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=4032x3024",
        "-frames:v",
        "1",
        "-y",
        png.to_str().unwrap(),
    ]);
    let photo = dir.path().join("photo.heic");
    let out = Command::new("heif-enc").args(["-q", "80", "-o"]).arg(&photo).arg(&png).output().unwrap();
    assert!(out.status.success());
    let size = std::fs::metadata(&photo).unwrap().len() / 1000;
    row(&format!("HEIC 12 MP ({size} KB)"), "heic", &photo);
}
