//! The host's ZIP is written as it is read: a 2 GiB event (two 1 GiB
//! videos, sparse files in the embedded store, so the test is cheap)
//! downloads while the process's resident memory stays flat, and the
//! archive is valid (`unzip -t`, every CRC checked). The 2 GiB run is the
//! SQLite and embedded-store combination's; on the others (the database
//! plays no part, and S3 objects are streamed into the bucket for real)
//! the objects are 128 MiB each, the same bound holding.

mod support;

use std::io::{Seek, SeekFrom, Write};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{TestServer, is_postgres, is_s3};
use upload_once_core::wire::AttemptResponse;
use upload_once_server::storage::PutGrant;
use uuid::Uuid;

/// What the process may grow by while the archive streams.
const RSS_BOUND: u64 = 96 << 20;
/// Bytes written at the start and the end of each object (the rest is
/// zeros, left as holes).
const MARK: &[u8] = b"upload-once";
/// What a run of zeros is compared with.
static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

/// The process's resident set size, from /proc/self/status.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Writes an object of `size` bytes (the marks, holes between) where the
/// embedded store keeps `key`, with its metadata, as its commit would.
fn sparse_object(server: &TestServer, key: &str, size: u64) {
    let root = server.state.config.data_dir.join("objects");
    let path = root.join(key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(MARK).unwrap();
    file.seek(SeekFrom::Start(size - MARK.len() as u64)).unwrap();
    file.write_all(MARK).unwrap();
    let meta = json!({"size": size, "content_type": "video/mp4", "sha256": "0".repeat(64)});
    std::fs::write(root.join(format!("{key}.meta")), meta.to_string()).unwrap();
}

/// Streams the same bytes into the bucket (no buffer of the object).
async fn streamed_object(server: &TestServer, key: &str, size: u64) {
    let upload = server.state.objects.presign_put(&PutGrant {
        key,
        content_type: "video/mp4",
        size,
        sha256: None,
        expires_at: server.state.now() + 600_000,
    });
    const CHUNK: u64 = 1 << 20;
    let chunks = futures_util::stream::iter((0..size.div_ceil(CHUNK)).map(move |n| {
        let len = CHUNK.min(size - n * CHUNK) as usize;
        let mut chunk = vec![0u8; len];
        if n == 0 {
            chunk[..MARK.len()].copy_from_slice(MARK);
        }
        if (n + 1) * CHUNK >= size {
            chunk[len - MARK.len()..].copy_from_slice(MARK);
        }
        Ok::<_, std::io::Error>(chunk)
    }));
    let mut request = server.http.put(&upload.url).body(reqwest::Body::wrap_stream(chunks));
    for (k, v) in &upload.headers {
        request = request.header(k, v);
    }
    let r = request.header("content-length", size).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
}

#[tokio::test]
async fn a_two_gigabyte_event_downloads_with_flat_memory_as_a_valid_zip() {
    let server = TestServer::start().await;
    let (count, size) = if is_s3() || is_postgres() { (2u64, 128u64 << 20) } else { (2, 1 << 30) };
    let event = server.create_event("big-party", 4 << 30, &["video/*"], "none").await;
    let guest = server.guest_of(&event).await;
    for n in 0..count {
        let id = Uuid::new_v4();
        let r = guest
            .authorize_raw(
                json!({"id": id, "filename": format!("film-{n}.mp4"), "size": size, "content_type": "video/mp4"}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let a: AttemptResponse = r.json().await.unwrap();
        if is_s3() {
            streamed_object(&server, &a.object_key, size).await;
        } else {
            sparse_object(&server, &a.object_key, size);
        }
        let r = guest.confirm_raw(id, json!({"size": size, "content_type": "video/mp4"})).await;
        assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    }
    let r = server
        .http
        .post(server.url("/v1/events/big-party/archive"))
        .bearer_auth(&event.host_token)
        .json(&json!({"media": "all"}))
        .send()
        .await
        .unwrap();
    let url = r.json::<Value>().await.unwrap()["url"].as_str().unwrap().to_owned();

    // Sampled every 20 ms while the archive streams.
    let baseline = rss();
    let peak = Arc::new(AtomicU64::new(baseline));
    let streaming = Arc::new(AtomicBool::new(true));
    let sampler = std::thread::spawn({
        let (peak, streaming) = (peak.clone(), streaming.clone());
        move || {
            while streaming.load(Ordering::SeqCst) {
                peak.fetch_max(rss(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    });
    let r = server.http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let length: u64 = r.headers()["content-length"].to_str().unwrap().parse().unwrap();
    assert!(length > count * size, "{length}");
    // Into a file that stays sparse: runs of zeros are skipped, not written.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("event.zip");
    let mut file = std::fs::File::create(&path).unwrap();
    let mut body = r.bytes_stream();
    let mut received = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.unwrap();
        received += chunk.len() as u64;
        if chunk.len() <= ZEROS.len() && chunk[..] == ZEROS[..chunk.len()] {
            file.seek(SeekFrom::Current(chunk.len() as i64)).unwrap();
        } else {
            file.write_all(&chunk).unwrap();
        }
    }
    file.set_len(received).unwrap();
    drop(file);
    streaming.store(false, Ordering::SeqCst);
    sampler.join().unwrap();
    let grown = peak.load(Ordering::SeqCst).saturating_sub(baseline);
    println!("streamed {received} bytes; resident memory grew by {} KiB at most", grown / 1024);
    assert_eq!(received, length, "the whole archive");
    assert!(grown < RSS_BOUND, "resident memory grew by {grown} bytes while {received} bytes streamed");

    let test = Command::new("unzip").arg("-t").arg(&path).output().expect("unzip (Debian's unzip package)");
    let said = String::from_utf8_lossy(&test.stdout);
    assert!(test.status.success() && said.contains("No errors detected"), "unzip -t: {said}");
    let listed = Command::new("unzip").arg("-Zl").arg(&path).output().unwrap();
    let listing = String::from_utf8_lossy(&listed.stdout);
    for n in 0..count {
        assert!(listing.contains(&format!(" {size} ")) && listing.contains(&format!("film-{n}.mp4")), "{listing}");
    }
}
