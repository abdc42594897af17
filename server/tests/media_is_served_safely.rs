//! Uploaded bytes are served so they can never run script on the server's
//! origin: only allow-listed image and video types are shown inline,
//! everything else is a nosniff download under a sandboxing CSP, and a
//! media URL only works with its own signature. (Originals go to the host
//! alone, through the `original_url` of the host's list; with S3 storage
//! their URL redirects to the bucket, presigned with the same type and
//! disposition.)

use crate::support;

use reqwest::StatusCode;
use serde_json::Value;
use support::media::host_list;
use support::{Guest, TestServer, is_s3, problem};
use upload_once_core::wire::Media;
use uuid::Uuid;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

/// Uploads `bytes` and returns the URL of the original the host is given.
async fn upload_as(guest: &Guest<'_>, content_type: &str, filename: &str, bytes: &[u8]) -> (Media, String) {
    let media = support::media::upload_as(guest, content_type, filename, bytes).await;
    let listed = host_list(guest).await;
    let entry = listed.iter().find(|m| m["id"] == media.id.to_string()).unwrap();
    (media, entry["original_url"].as_str().unwrap().to_owned())
}

/// The answer to a GET of an original: the server's own, or (S3) the
/// redirect's, whose presigned URL must ask the bucket for the same type
/// and disposition; then the bytes, wherever they came from.
async fn fetch(server: &TestServer, url: &str) -> (reqwest::Response, Vec<u8>) {
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = no_redirects.get(url).send().await.unwrap();
    if !is_s3() {
        let bytes = no_redirects.get(url).send().await.unwrap().bytes().await.unwrap().to_vec();
        return (r, bytes);
    }
    assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT, "{url}");
    let bytes = server.http.get(url).send().await.unwrap().bytes().await.unwrap().to_vec();
    (r, bytes)
}

/// The header as the browser will get it: the server's, or the one the
/// presigned URL asks the bucket for.
fn served(r: &reqwest::Response, name: &str) -> Option<String> {
    if r.status() != StatusCode::TEMPORARY_REDIRECT {
        return header(r, name);
    }
    let location = reqwest::Url::parse(&header(r, "location").unwrap()).unwrap();
    let wanted = format!("response-{name}");
    location.query_pairs().find(|(k, _)| *k == wanted).map(|(_, v)| v.into_owned())
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers().get(name).map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn active_content_is_served_as_a_sandboxed_download() {
    let server = TestServer::start().await;
    let event = server.create_event("anything-goes", 100_000, &["*/*"], "none").await;
    let guest = server.guest_of(&event).await;
    let risky: [(&str, &str, &[u8]); 7] = [
        ("text/html", "x.html", b"<html><script>alert(document.cookie)</script></html>"),
        ("image/svg+xml", "x.svg", b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>"),
        (
            "application/xhtml+xml",
            "x.xhtml",
            b"<html xmlns=\"http://www.w3.org/1999/xhtml\"><script>alert(1)</script></html>",
        ),
        ("text/javascript", "x.js", b"alert(1)"),
        ("application/pdf", "x.pdf", b"%PDF-1.4 /JS (alert(1))"),
        ("text/plain", "x.txt", b"<script>alert(1)</script>"),
        // Claims to be an image, but is not one the browser may render inline
        // (other bytes than the text's: the same bytes would be its media).
        ("image/x-icon", "x.ico", b"<script>alert(2)</script>"),
    ];
    for (content_type, filename, bytes) in risky {
        let (media, original) = upload_as(&guest, content_type, filename, bytes).await;
        assert_eq!(media.content_type, content_type, "the record keeps the real type");
        let (r, body) = fetch(&server, &original).await;
        assert_eq!(served(&r, "content-type").as_deref(), Some("application/octet-stream"), "{content_type}");
        let disposition = served(&r, "content-disposition").unwrap_or_default();
        assert!(disposition.starts_with("attachment"), "{content_type}: Content-Disposition {disposition:?}");
        assert_eq!(header(&r, "x-content-type-options").as_deref(), Some("nosniff"), "{content_type}");
        let csp = header(&r, "content-security-policy").unwrap_or_default();
        assert!(csp.split(';').any(|d| d.trim() == "sandbox"), "{content_type}: CSP {csp:?}");
        assert!(csp.contains("default-src 'none'"), "{content_type}: CSP {csp:?}");
        assert_eq!(body.as_slice(), bytes, "{content_type}: the bytes as stored");
    }
}

#[tokio::test]
async fn images_and_videos_are_served_inline_with_nosniff() {
    let server = TestServer::start().await;
    let event = server.create_event("gallery", 100_000, &["*/*"], "none").await;
    let guest = server.guest_of(&event).await;
    for (content_type, bytes) in
        [("image/png", PNG), ("image/jpeg", b"\xff\xd8\xff\xe0 jfif".as_slice()), ("video/mp4", b"\0\0\0\x18ftypmp42")]
    {
        let (_, original) = upload_as(&guest, content_type, "x", bytes).await;
        let (r, body) = fetch(&server, &original).await;
        assert_eq!(served(&r, "content-type").as_deref(), Some(content_type));
        assert_eq!(served(&r, "content-disposition"), None, "{content_type} is shown inline");
        assert_eq!(header(&r, "x-content-type-options").as_deref(), Some("nosniff"));
        assert!(header(&r, "content-security-policy").unwrap_or_default().contains("sandbox"));
        if !is_s3() {
            assert_eq!(header(&r, "content-length"), Some(bytes.len().to_string()));
        }
        assert_eq!(body.as_slice(), bytes);
    }
}

#[tokio::test]
async fn a_media_url_only_works_with_its_own_signature() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let (media, original) = upload_as(&guest, "image/png", "a.png", PNG).await;
    let (other, other_original) = upload_as(&guest, "image/png", "b.png", b"another").await;
    let (r, _) = fetch(&server, &original).await;
    assert!(r.status() == StatusCode::OK || is_s3(), "pending media is readable by the host's URL");

    // Originals and renditions alike.
    for (url, other_url, path) in [
        (original.as_str(), other_original.as_str(), "content"),
        (media.url.as_deref().unwrap(), other.url.as_deref().unwrap(), "display"),
    ] {
        let (base, sig) = url.split_once("?sig=").unwrap();
        let other_sig = other_url.split_once("?sig=").unwrap().1;
        let mut flipped = sig.to_owned();
        let last = flipped.pop().unwrap();
        flipped.push(if last == '0' { '1' } else { '0' });
        let tampered = [
            format!("{base}?sig={flipped}"),
            format!("{base}?sig={}", &sig[..32]),
            format!("{base}?sig="),
            format!("{base}?sig=zz"),
            format!("{base}?sig={other_sig}"),
            format!("{}/v1/media/{}/{path}?sig={sig}", server.base, Uuid::new_v4()),
            format!("{}/v1/media/{}/{path}?sig={sig}", server.base, other.id),
        ];
        for url in tampered {
            let (status, p) = problem(server.http.get(&url).send().await.unwrap()).await;
            assert_eq!((status, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{url}");
        }
    }
    // A rendition's signature does not open the original, nor the other way.
    let rendition_sig = media.url.as_deref().unwrap().split_once("?sig=").unwrap().1;
    let original_sig = original.split_once("?sig=").unwrap().1;
    for url in [
        format!("{}/v1/media/{}/content?sig={rendition_sig}", server.base, media.id),
        format!("{}/v1/media/{}/thumb?sig={original_sig}", server.base, media.id),
    ] {
        let (status, p) = problem(server.http.get(&url).send().await.unwrap()).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{url}");
    }
    // An unknown media id with a valid signature for it is the same 404.
    let unknown = Uuid::new_v4();
    for url in [server.state.links.media_url(0, unknown), server.state.links.original_url(unknown, "no event")] {
        let (status, p): (StatusCode, Value) = problem(server.http.get(url).send().await.unwrap()).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    }
}
