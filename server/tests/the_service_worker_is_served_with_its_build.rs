//! The guest page's service worker (`www/sw.js`) goes out at `/sw.js` with
//! the build it caches filled in (a version that changes whenever any file
//! of `www/`, the rendered guest page or the package changes, and the
//! package's version), revalidated on every visit (`no-cache`, an `ETag`),
//! as JavaScript, never a stale precompressed copy, and with a policy that
//! lets it fetch from this origin only. The pages allow it (`worker-src`),
//! and the package's timer worker, made from a Blob.

use crate::support;

use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use support::*;

struct Site {
    dir: tempfile::TempDir,
    server: TestServer,
    package: String,
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// The repository's service worker.
fn sw_source() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../www/sw.js")).unwrap()
}

fn www(site: &Site) -> PathBuf {
    site.dir.path().join("www")
}

async fn site(configure: impl FnOnce(&mut upload_once_server::config::Config) + Send + 'static) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let (pkg, www) = (dir.path().join("pkg"), dir.path().join("www"));
    write(&pkg.join("upload_once_bg.wasm"), b"\0asm\x01\0\0\0");
    write(&pkg.join("upload_once.js"), b"export default function init() {}");
    write(
        &www.join("index.html"),
        b"<!doctype html><head>\n  <!-- upload-once:api-origins -->\n  <!-- upload-once:preload -->\n  <script type=\"module\" src=\"guest.js\"></script></head>",
    );
    write(&www.join("guest.js"), b"import init from \"/pkg/upload_once.js\";");
    write(&www.join("i18n/en.js"), b"export default {};");
    write(&www.join("sw.js"), sw_source().as_bytes());
    // A copy of the unfilled worker: never what goes out.
    write(&www.join("sw.js.br"), b"br of sw.js");
    write(&www.join("sw.js.gz"), b"gz of sw.js");
    let mut options = Options::default();
    options.pkg_dir = Some(pkg.clone());
    options.www_dir = Some(www);
    options.configure = Some(Box::new(configure));
    let package = upload_once_server::routes::assets::package_version(&pkg).expect("a version");
    let server = TestServer::start_with(options).await;
    Site { dir, server, package }
}

fn header(r: &reqwest::Response, name: &str) -> String {
    joined(r.headers(), name)
}

fn joined(headers: &reqwest::header::HeaderMap, name: &str) -> String {
    headers.get_all(name).iter().map(|v| v.to_str().unwrap().to_owned()).collect::<Vec<_>>().join(", ")
}

/// `GET /sw.js` as a browser asks for it: status, headers, body.
async fn get_sw(site: &Site) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let r = site.server.http.get(site.server.url("/sw.js")).header("accept-encoding", "br, gzip").send().await.unwrap();
    (r.status(), r.headers().clone(), r.text().await.unwrap())
}

/// The build the served worker carries: `(version, pkg)`.
fn build(body: &str) -> (String, Option<String>) {
    let line = body.lines().find(|l| l.starts_with("const BUILD = ")).expect("a BUILD line");
    let json = line.trim_start_matches("const BUILD = ").trim_end_matches(';');
    let value: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{line}: {e}"));
    (value["version"].as_str().unwrap().to_owned(), value["pkg"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn the_worker_carries_its_build_and_revalidates() {
    let site = site(|_| {}).await;
    let (status, r, body) = get_sw(&site).await;
    assert_eq!(status, StatusCode::OK);
    let header = |r: &reqwest::header::HeaderMap, name: &str| joined(r, name);
    assert_eq!(header(&r, "content-type"), "text/javascript; charset=utf-8");
    assert_eq!(header(&r, "cache-control"), "no-cache", "the browser's update check must reach the server");
    assert_eq!(header(&r, "content-encoding"), "", "rendered per request, never a precompressed copy");
    assert_eq!(header(&r, "content-security-policy"), "default-src 'none'; connect-src 'self'");
    assert_eq!(header(&r, "x-content-type-options"), "nosniff");
    assert!(!body.contains("\"upload-once:build\""), "the placeholder is filled");
    let (version, pkg) = build(&body);
    assert_eq!(version.len(), 16, "{version}");
    assert_eq!(pkg.as_deref(), Some(site.package.as_str()));

    let etag = header(&r, "etag");
    assert!(!etag.is_empty());
    let again = site.server.http.get(site.server.url("/sw.js")).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(joined(again.headers(), "cache-control"), "no-cache");
}

#[tokio::test]
async fn any_change_to_the_site_is_a_new_version() {
    let site = site(|_| {}).await;
    let (first, _) = build(&get_sw(&site).await.2);
    assert_eq!(build(&get_sw(&site).await.2).0, first, "the same site, the same version");

    write(&www(&site).join("i18n/en.js"), b"export default { a: 1 };");
    let (second, _) = build(&get_sw(&site).await.2);
    assert_ne!(second, first, "a translation changed");

    write(&www(&site).join("guest.js"), b"import init from \"/pkg/upload_once.js\"; init();");
    let (third, _) = build(&get_sw(&site).await.2);
    assert_ne!(third, second, "a script changed");

    // A precompressed copy is not the site: written or not, the same version.
    write(&www(&site).join("guest.js.br"), b"br of guest.js");
    assert_eq!(build(&get_sw(&site).await.2).0, third);
}

#[tokio::test]
async fn the_rendered_guest_page_is_part_of_the_version() {
    let plain = site(|_| {}).await;
    let other = site(|c| c.page_api_origins = vec!["https://api.example.com".into()]).await;
    let (a, b) = (build(&get_sw(&plain).await.2).0, build(&get_sw(&other).await.2).0);
    assert_ne!(a, b, "another API origin changes the guest page (its <meta>, its policy): another version");
}

#[tokio::test]
async fn without_the_file_there_is_no_worker() {
    let site = site(|_| {}).await;
    std::fs::remove_file(www(&site).join("sw.js")).unwrap();
    let r = site.server.http.get(site.server.url("/sw.js")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_pages_allow_their_own_workers_only() {
    let site = site(|_| {}).await;
    for path in ["/", "/index.html"] {
        let r = site.server.http.get(site.server.url(path)).send().await.unwrap();
        let csp = header(&r, "content-security-policy");
        let worker = csp.split(';').map(str::trim).find(|d| d.starts_with("worker-src ")).unwrap_or_default();
        assert_eq!(worker, "worker-src 'self' blob:", "{path}: {csp}");
        // The web app manifest (the share target of issue 33) from this
        // origin only.
        let manifest = csp.split(';').map(str::trim).find(|d| d.starts_with("manifest-src ")).unwrap_or_default();
        assert_eq!(manifest, "manifest-src 'self'", "{path}: {csp}");
    }
}

/// The repository's module worker for Background Fetch.
fn background_source() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../www/sw-background.js")).unwrap()
}

#[tokio::test]
async fn the_background_fetch_worker_may_compile_the_package_and_reach_the_api_only() {
    let site = site(|c| c.page_api_origins = vec!["https://api.example.com".into()]).await;
    write(&www(&site).join("sw-background.js"), background_source().as_bytes());
    // (The routes are read when the server starts: a second server sees the file.)
    let mut options = Options::default();
    options.pkg_dir = Some(site.dir.path().join("pkg"));
    options.www_dir = Some(www(&site));
    options.configure = Some(Box::new(|c: &mut upload_once_server::config::Config| {
        c.page_api_origins = vec!["https://api.example.com".into()]
    }));
    let server = TestServer::start_with(options).await;
    let r =
        server.http.get(server.url("/sw-background.js")).header("accept-encoding", "br, gzip").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(header(&r, "content-type").starts_with("text/javascript"), "{}", header(&r, "content-type"));
    assert_eq!(header(&r, "cache-control"), "no-cache");
    assert_eq!(header(&r, "x-content-type-options"), "nosniff");
    assert_eq!(
        header(&r, "content-security-policy"),
        "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self' https://api.example.com"
    );
    let body = r.text().await.unwrap();
    assert!(body.contains("import \"/sw.js\";") && body.contains("settleBackgroundFetch"), "{body}");
}
