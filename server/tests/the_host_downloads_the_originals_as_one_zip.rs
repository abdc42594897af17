//! The host downloads every approved original (or every original) as one
//! ZIP, through a link the host token asks for: the originals byte for
//! byte, each under its filename made unique, in an archive `unzip -t`
//! finds valid, of the length the answer announced.

use crate::support;

use std::process::Command;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::media::{moderate, upload_as};
use support::{TestServer, problem};

async fn link(server: &TestServer, slug: &str, token: &str, media: &str) -> reqwest::Response {
    server
        .http
        .post(server.url(&format!("/v1/events/{slug}/archive")))
        .bearer_auth(token)
        .json(&json!({ "media": media }))
        .send()
        .await
        .unwrap()
}

/// Downloads `url` into a file; (the file, its names in order, the
/// announced length).
async fn download(server: &TestServer, url: &str, dir: &std::path::Path) -> (std::path::PathBuf, Vec<String>) {
    let r = server.http.get(url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/zip");
    assert!(r.headers()["content-disposition"].to_str().unwrap().starts_with("attachment"));
    let length: usize = r.headers()["content-length"].to_str().unwrap().parse().unwrap();
    let bytes = r.bytes().await.unwrap();
    assert_eq!(bytes.len(), length, "the announced length");
    let path = dir.join(format!("{}.zip", uuid::Uuid::new_v4()));
    std::fs::write(&path, &bytes).unwrap();
    let test = Command::new("unzip").arg("-t").arg(&path).output().expect("unzip (Debian's unzip package)");
    let said = String::from_utf8_lossy(&test.stdout);
    assert!(test.status.success() && said.contains("No errors detected"), "unzip -t: {said}");
    let listed = Command::new("unzip").arg("-Z1").arg(&path).output().unwrap();
    let names = String::from_utf8(listed.stdout).unwrap().lines().map(str::to_owned).collect();
    (path, names)
}

fn extracted(path: &std::path::Path, name: &str) -> Vec<u8> {
    // unzip reads its name arguments as wildcards.
    let escaped = name.replace('[', "[[]");
    let out = Command::new("unzip").arg("-p").arg(path).arg(escaped).output().unwrap();
    assert!(out.status.success(), "unzip -p {name}");
    out.stdout
}

#[tokio::test]
async fn every_approved_original_is_in_the_zip_under_a_unique_name() {
    let server = TestServer::start().await;
    let event = server.create_event("zip-party", 1_000_000, &["*/*"], "required").await;
    let guest = server.guest_of(&event).await;
    let files: [(&str, &[u8]); 4] = [
        ("IMG_0001.JPG", b"first photo, with its EXIF"),
        ("IMG_0001.JPG", b"another phone, the same name"),
        ("img_0001.jpg", b"the same name in other letters"),
        ("party.mp4", b"\0\0\0\x18ftypmp42 a video"),
    ];
    let mut ids = Vec::new();
    for (name, bytes) in files {
        ids.push(upload_as(&guest, "image/jpeg", name, bytes).await.id);
        // One after the other: the archive lists them oldest first.
        server.clock.advance(1000);
    }
    for id in &ids[..3] {
        moderate(&guest, *id, "approve").await;
    }
    let dir = tempfile::tempdir().unwrap();

    let r = link(&server, &event.event.slug, &event.host_token, "approved").await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    let (zip, names) = download(&server, body["url"].as_str().unwrap(), dir.path()).await;
    assert_eq!(names, ["IMG_0001.JPG", "IMG_0001 (2).JPG", "img_0001 (3).jpg"], "oldest first, unique");
    for (name, (_, bytes)) in names.iter().zip(files) {
        assert_eq!(extracted(&zip, name), bytes, "{name}: the original, byte for byte");
    }

    let r = link(&server, &event.event.slug, &event.host_token, "all").await;
    let body: Value = r.json().await.unwrap();
    let (zip, names) = download(&server, body["url"].as_str().unwrap(), dir.path()).await;
    assert_eq!(names.len(), 4, "{names:?}");
    assert_eq!(extracted(&zip, "party.mp4"), files[3].1);
}

#[tokio::test]
async fn only_the_host_gets_a_link_and_a_link_is_bound_and_expires() {
    let server = TestServer::start().await;
    let event = server.create_event("zip-closed", 1_000_000, &["*/*"], "none").await;
    let guest = server.guest_of(&event).await;
    upload_as(&guest, "image/jpeg", "a.jpg", b"a photo").await;
    let slug = &event.event.slug;

    let r = server.http.post(server.url(&format!("/v1/events/{slug}/archive"))).json(&json!({})).send().await.unwrap();
    assert_eq!(problem(r).await.1["code"], "unauthorized");
    for token in [&guest.session, &event.wall_token] {
        assert_eq!(problem(link(&server, slug, token, "all").await).await.1["code"], "forbidden");
    }

    let body: Value = link(&server, slug, &event.host_token, "approved").await.json().await.unwrap();
    let url = body["url"].as_str().unwrap();
    // Asking for more than was signed.
    let widened = url.replace("media=approved", "media=all");
    assert_eq!(problem(server.http.get(&widened).send().await.unwrap()).await.1["code"], "bad_signature");
    // Another event's slug.
    let moved = url.replace(&format!("/events/{slug}/"), "/events/zip-party/");
    assert!(server.http.get(&moved).send().await.unwrap().status().is_client_error());
    assert_eq!(server.http.get(url).send().await.unwrap().status(), StatusCode::OK);
    server.clock.advance(16 * 60 * 1000);
    assert_eq!(problem(server.http.get(url).send().await.unwrap()).await.1["code"], "url_expired");
}
