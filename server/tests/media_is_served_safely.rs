//! Uploaded bytes are served so they can never run script on the server's
//! origin: only allow-listed image and video types are shown inline,
//! everything else is a nosniff download under a sandboxing CSP, and a
//! media URL only works with its own signature.

mod support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{Guest, TestServer, problem};
use upload_once_core::wire::{AttemptResponse, Media};
use uuid::Uuid;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

async fn upload_as(guest: &Guest<'_>, content_type: &str, filename: &str, bytes: &[u8]) -> Media {
    let id = Uuid::new_v4();
    let r = guest
        .authorize_raw(json!({"id": id, "filename": filename, "size": bytes.len(), "content_type": content_type}))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED, "{content_type}");
    let a: AttemptResponse = r.json().await.unwrap();
    assert_eq!(guest.server.put(a.put().unwrap(), bytes.to_vec()).await.status(), StatusCode::OK, "{content_type}");
    let r = guest.confirm_raw(id, json!({"size": bytes.len(), "content_type": content_type})).await;
    assert_eq!(r.status(), StatusCode::OK, "{content_type}");
    r.json().await.unwrap()
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
        let media = upload_as(&guest, content_type, filename, bytes).await;
        assert_eq!(media.content_type, content_type, "the record keeps the real type");
        let r = server.http.get(&media.url).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{content_type}");
        assert_eq!(header(&r, "content-type").as_deref(), Some("application/octet-stream"), "{content_type}");
        let disposition = header(&r, "content-disposition").unwrap_or_default();
        assert!(disposition.starts_with("attachment"), "{content_type}: Content-Disposition {disposition:?}");
        assert_eq!(header(&r, "x-content-type-options").as_deref(), Some("nosniff"), "{content_type}");
        let csp = header(&r, "content-security-policy").unwrap_or_default();
        assert!(csp.split(';').any(|d| d.trim() == "sandbox"), "{content_type}: CSP {csp:?}");
        assert!(csp.contains("default-src 'none'"), "{content_type}: CSP {csp:?}");
        assert_eq!(r.bytes().await.unwrap().as_ref(), bytes, "{content_type}: the bytes as stored");
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
        let media = upload_as(&guest, content_type, "x", bytes).await;
        let r = server.http.get(&media.url).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(header(&r, "content-type").as_deref(), Some(content_type));
        assert_eq!(header(&r, "content-disposition"), None, "{content_type} is shown inline");
        assert_eq!(header(&r, "x-content-type-options").as_deref(), Some("nosniff"));
        assert!(header(&r, "content-security-policy").unwrap_or_default().contains("sandbox"));
        assert_eq!(header(&r, "content-length"), Some(bytes.len().to_string()));
        assert_eq!(r.bytes().await.unwrap().as_ref(), bytes);
    }
}

#[tokio::test]
async fn a_media_url_only_works_with_its_own_signature() {
    let server = TestServer::start().await;
    let guest = server.guest().await;
    let (_, media) = guest.upload(PNG.to_vec()).await;
    let (_, other) = guest.upload(b"another".to_vec()).await;
    assert_eq!(
        server.http.get(&media.url).send().await.unwrap().status(),
        StatusCode::OK,
        "pending media is readable by URL"
    );

    let (base, sig) = media.url.split_once("?sig=").unwrap();
    let other_sig = other.url.split_once("?sig=").unwrap().1;
    let mut flipped = sig.to_owned();
    let last = flipped.pop().unwrap();
    flipped.push(if last == '0' { '1' } else { '0' });
    let tampered = [
        format!("{base}?sig={flipped}"),
        format!("{base}?sig={}", &sig[..32]),
        format!("{base}?sig="),
        format!("{base}?sig=zz"),
        format!("{base}?sig={other_sig}"),
        format!("{}/v1/media/{}/content?sig={sig}", server.base, Uuid::new_v4()),
        format!("{}/v1/media/{}/content?sig={sig}", server.base, other.id),
    ];
    for url in tampered {
        let (status, p) = problem(server.http.get(&url).send().await.unwrap()).await;
        assert_eq!((status, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{url}");
    }
    // An unknown media id with a valid signature for it is the same 404.
    let unknown = Uuid::new_v4();
    let r = server.http.get(server.state.media_url(unknown)).send().await.unwrap();
    let (status, p): (StatusCode, Value) = problem(r).await;
    assert_eq!((status, p["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
}
