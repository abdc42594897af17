//! Media URLs answer HTTP Range requests, which a phone's video player
//! needs to seek (Safari on iOS plays nothing without them): one range is
//! `206` with its `Content-Range`, a range past the end `416`, several
//! ranges the whole body (`200`, as documented). With S3 storage the URL
//! redirects to a presigned URL of the bucket, which answers ranges itself.

use crate::support;

use reqwest::StatusCode;
use support::media::{host_list, open_event, upload_as};
use support::{TestServer, is_s3};

fn video() -> Vec<u8> {
    let mut bytes = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom".to_vec();
    bytes.extend((0..1000u32).map(|i| (i % 251) as u8));
    bytes
}

async fn get(server: &TestServer, url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = server.http.get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers().get(name).map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn one_range_is_206_a_range_past_the_end_416_and_several_the_whole_body() {
    if is_s3() {
        return s3_redirects_to_the_bucket().await;
    }
    let server = TestServer::start().await;
    let guest = open_event(&server).await;
    let bytes = video();
    let size = bytes.len();
    upload_as(&guest, "video/mp4", "clip.mp4", &bytes).await;
    let original = host_list(&guest).await[0]["original_url"].as_str().unwrap().to_owned();
    // The host's original (a video's shareable rendition is served the
    // same way: videos_are_shared_without_their_metadata.rs seeks in one).
    for url in [original.as_str()] {
        let r = get(&server, url, &[]).await;
        assert_eq!(r.status(), StatusCode::OK, "{url}");
        assert_eq!(header(&r, "accept-ranges").as_deref(), Some("bytes"));
        assert_eq!(r.bytes().await.unwrap().len(), size);

        for (range, first, last) in [
            ("bytes=0-9", 0, 9),
            ("bytes=30-", 30, size - 1),
            ("bytes=-5", size - 5, size - 1),
            ("bytes=1000-99999", 1000, size - 1),
            ("bytes=-99999", 0, size - 1),
        ] {
            let r = get(&server, url, &[("range", range)]).await;
            assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT, "{range}");
            assert_eq!(header(&r, "content-range"), Some(format!("bytes {first}-{last}/{size}")), "{range}");
            assert_eq!(header(&r, "content-length"), Some((last - first + 1).to_string()), "{range}");
            assert_eq!(header(&r, "accept-ranges").as_deref(), Some("bytes"));
            assert_eq!(header(&r, "content-type").as_deref(), Some("video/mp4"));
            assert_eq!(header(&r, "x-content-type-options").as_deref(), Some("nosniff"));
            assert_eq!(r.bytes().await.unwrap().as_ref(), &bytes[first..=last], "{range}");
        }

        for range in [format!("bytes={size}-"), format!("bytes={}-{}", size + 10, size + 20), "bytes=-0".to_owned()] {
            let r = get(&server, url, &[("range", &range)]).await;
            assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE, "{range}");
            assert_eq!(header(&r, "content-range"), Some(format!("bytes */{size}")), "{range}");
        }

        // Several ranges, another unit, a malformed one, a stale If-Range:
        // the whole body.
        for headers in [
            vec![("range", "bytes=0-1,5-6")],
            vec![("range", "frames=0-1")],
            vec![("range", "bytes=9-2")],
            vec![("range", "bytes=0-9"), ("if-range", "\"not-the-etag\"")],
        ] {
            let r = get(&server, url, &headers).await;
            assert_eq!(r.status(), StatusCode::OK, "{headers:?}");
            assert_eq!(r.bytes().await.unwrap().as_ref(), bytes.as_slice(), "{headers:?}");
        }
        // If-Range with the current ETag keeps the range.
        let etag = header(&get(&server, url, &[]).await, "etag").unwrap();
        let r = get(&server, url, &[("range", "bytes=0-9"), ("if-range", &etag)]).await;
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
    }
}

/// With S3 storage, a media URL is a redirect to a presigned URL of the
/// bucket, whose answers carry the server's type and disposition and which
/// answers ranges itself.
async fn s3_redirects_to_the_bucket() {
    let server = TestServer::start().await;
    let guest = open_event(&server).await;
    let bytes = video();
    let media = upload_as(&guest, "video/mp4", "clip.mp4", &bytes).await;
    let html = upload_as(&guest, "text/html", "page.html", b"<script>alert(1)</script>").await;
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let listed = host_list(&guest).await;
    let original = listed.iter().find(|m| m["id"] == media.id.to_string()).unwrap()["original_url"].as_str().unwrap();
    let r = no_redirects.get(original).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(header(&r, "cache-control").as_deref(), Some("no-store"));
    let location = header(&r, "location").unwrap();
    assert!(location.starts_with(&server.upload_url_prefix(&media.object_key)), "{location}");
    assert!(location.contains("response-content-type=video%2Fmp4"), "{location}");
    let r = no_redirects.get(&location).header("range", "bytes=0-9").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(header(&r, "content-range"), Some(format!("bytes 0-9/{}", bytes.len())));
    assert_eq!(r.bytes().await.unwrap().as_ref(), &bytes[..10]);

    // What may not be shown inline is presigned as a download.
    let original = host_list(&guest).await.into_iter().find(|m| m["id"] == html.id.to_string()).unwrap();
    let r = no_redirects.get(original["original_url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT);
    let location = header(&r, "location").unwrap();
    assert!(location.contains("response-content-type=application%2Foctet-stream"), "{location}");
    assert!(location.contains("response-content-disposition=attachment"), "{location}");
}
