//! Times the server's own video and HEIC work on fixtures made here by the
//! tools themselves (docs/benchmarks.md, "Video and HEIC renditions"):
//! for one minute of 1080p H.264 and of 1080p HEVC, the probe, the poster
//! and the shareable MP4 (copied for H.264, encoded for HEVC); for a 12 MP
//! HEIC photo, its decode by heif-convert and its two JPEG renditions. Each
//! with its wall time and the peak resident memory of the child process
//! (`getrusage(RUSAGE_CHILDREN)`, the largest child so far).
//!
//! `cargo run -q -p upload-once-server --example media_tools`

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use upload_once_server::media::heic::{self, HeicTools};
use upload_once_server::media::renditions;
use upload_once_server::media::tools::Scratch;
use upload_once_server::media::video::{self, VideoLimits, VideoTools};

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

fn report(what: &str, started: Instant) {
    println!("| {what} | {:.2} s | {:.0} MiB |", started.elapsed().as_secs_f64(), peak_child_mib());
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = Scratch::new(dir.path()).unwrap();
    let limits = VideoLimits { timeout: Duration::from_secs(1800), ..VideoLimits::default() };
    let tools = VideoTools::find(Path::new("ffmpeg"), Path::new("ffprobe"), &limits).await.unwrap();
    println!("{}\n", tools.version);
    println!("| step | time | peak child memory (largest so far) |\n|---|---|---|");
    let source = "testsrc2=size=1920x1080:rate=30:duration=60";
    for (name, encoder) in [("H.264", "libx264"), ("HEVC", "libx265")] {
        let input = scratch.path(&format!("{encoder}.mp4"));
        let started = Instant::now();
        let input_str = input.to_str().unwrap();
        ffmpeg(&[
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            source,
            "-f",
            "lavfi",
            "-i",
            "sine=duration=60",
            "-c:v",
            encoder,
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-b:v",
            "12M",
            "-c:a",
            "aac",
            "-y",
            input_str,
        ]);
        println!(
            "| (fixture: 60 s of 1080p30 {name}, {} MB, made in {:.0} s) | | |",
            std::fs::metadata(&input).unwrap().len() / 1_000_000,
            started.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        let (probe, plain) = video::probe(&tools, &input).await.unwrap();
        report(&format!("{name}: probe"), started);
        let started = Instant::now();
        let png = video::poster(&tools, &input, &probe).await.unwrap();
        let stills = renditions::make(&png, image::ImageFormat::Png).unwrap();
        report(&format!("{name}: poster (still + two JPEGs, {} × {})", stills.width, stills.height), started);
        let started = Instant::now();
        let output = scratch.path(&format!("{encoder}-shareable.mp4"));
        let copy = probe.copyable(plain);
        video::shareable(&tools, &input, &output, &probe, copy).await.unwrap();
        let how = if copy { "copied" } else { "encoded to H.264" };
        let size = std::fs::metadata(&output).unwrap().len() / 1_000_000;
        report(&format!("{name}: shareable MP4 ({how}, {size} MB)"), started);
    }
    // A 12 MP photo (4032 × 3024, an iPhone's), as HEIC.
    let heic_tools = HeicTools::find(Path::new("heif-convert")).await.unwrap();
    let png = scratch.path("photo.png");
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
    let photo = scratch.path("photo.heic");
    let status = Command::new("heif-enc").args(["-q", "80", "-o"]).arg(&photo).arg(&png).output().unwrap();
    assert!(status.status.success());
    let started = Instant::now();
    let decoded = heic::to_png(&heic_tools, &photo, &scratch, limits.timeout, limits.memory).await.unwrap();
    report(
        &format!("HEIC 12 MP ({} KB): heif-convert to PNG", std::fs::metadata(&photo).unwrap().len() / 1000),
        started,
    );
    let started = Instant::now();
    let made = renditions::make(&decoded, image::ImageFormat::Png).unwrap();
    println!(
        "| HEIC 12 MP: the two JPEGs ({} × {}, in the server's process) | {:.2} s | |",
        made.width,
        made.height,
        started.elapsed().as_secs_f64()
    );
}
