//! The pages and the package go out for a slow phone network: the
//! precompressed copy `Accept-Encoding` asks for (with `Vary`), the `.wasm`
//! as `application/wasm`, the package immutable under its versioned path and
//! revalidated elsewhere, and the guest page with an import map and preloads
//! for the versioned package. A copy older than its file is never served.

use crate::support;

use std::path::Path;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use support::*;

struct Site {
    _dir: tempfile::TempDir,
    server: TestServer,
    version: String,
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Sets `path`'s modification time `secs` seconds in the past.
fn age(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs)).unwrap();
}

async fn site() -> Site {
    let dir = tempfile::tempdir().unwrap();
    let (pkg, www) = (dir.path().join("pkg"), dir.path().join("www"));
    write(&pkg.join("upload_once_bg.wasm"), b"\0asm\x01\0\0\0 the wasm");
    write(&pkg.join("upload_once.js"), b"export default function init() {}");
    // The copies are not real brotli/gzip here: the server sends them as they
    // are, so the test can tell which one went out.
    for (name, _) in [("upload_once_bg.wasm", ()), ("upload_once.js", ())] {
        write(&pkg.join(format!("{name}.br")), format!("br of {name}").as_bytes());
        write(&pkg.join(format!("{name}.gz")), format!("gz of {name}").as_bytes());
        age(&pkg.join(name), 60);
    }
    write(
        &www.join("index.html"),
        b"<!doctype html><head>\n  <!-- upload-once:preload -->\n  <script type=\"module\" src=\"guest.js\"></script></head>",
    );
    write(&www.join("guest.js"), b"import init from \"/pkg/upload_once.js\";");
    write(&www.join("guest.js.gz"), b"gz of guest.js");
    age(&www.join("guest.js"), 60);
    // A copy made before its file was edited: stale.
    write(&www.join("style.css.br"), b"br of an older style.css");
    age(&www.join("style.css.br"), 60);
    write(&www.join("style.css"), b"body { color: black }");
    let mut options = Options::default();
    options.pkg_dir = Some(pkg.clone());
    options.www_dir = Some(www);
    let version = upload_once_server::routes::assets::package_version(&pkg).expect("a version");
    let server = TestServer::start_with(options).await;
    Site { _dir: dir, server, version }
}

async fn get(site: &Site, path: &str, accept: Option<&str>) -> reqwest::Response {
    let mut request = site.server.http.get(site.server.url(path));
    if let Some(a) = accept {
        request = request.header("accept-encoding", a);
    }
    request.send().await.unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers().get_all(name).iter().map(|v| v.to_str().unwrap().to_owned()).collect::<Vec<_>>().join(", ")
}

#[tokio::test]
async fn the_package_goes_out_precompressed_with_vary() {
    let site = site().await;
    for (accept, encoding, body) in [
        (Some("gzip, deflate, br"), "br", "br of upload_once_bg.wasm"),
        (Some("gzip"), "gzip", "gz of upload_once_bg.wasm"),
    ] {
        let r = get(&site, "/pkg/upload_once_bg.wasm", accept).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(header(&r, "content-encoding"), encoding);
        assert_eq!(header(&r, "content-type"), "application/wasm", "streaming compilation needs it");
        assert!(header(&r, "vary").to_lowercase().contains("accept-encoding"), "vary: {}", header(&r, "vary"));
        assert_eq!(r.text().await.unwrap(), body);
    }
    let plain = get(&site, "/pkg/upload_once_bg.wasm", None).await;
    assert_eq!(header(&plain, "content-encoding"), "");
    assert_eq!(plain.bytes().await.unwrap().as_ref(), b"\0asm\x01\0\0\0 the wasm");
}

#[tokio::test]
async fn the_versioned_package_is_immutable_and_the_rest_revalidates() {
    let site = site().await;
    let v = &site.version;
    let r = get(&site, &format!("/pkg/v/{v}/upload_once.js"), Some("br")).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header(&r, "cache-control"), "public, max-age=31536000, immutable");
    assert_eq!(header(&r, "content-encoding"), "br");

    let r = get(&site, "/pkg/upload_once.js", Some("br")).await;
    assert_eq!(header(&r, "cache-control"), "no-cache");
    let r = get(&site, "/guest.js", Some("gzip")).await;
    assert_eq!((header(&r, "cache-control"), header(&r, "content-encoding")), ("no-cache".into(), "gzip".into()));
    assert!(header(&r, "content-type").contains("javascript"));

    // Another version is not this package: never served as immutable.
    let r = get(&site, "/pkg/v/0000000000000000/upload_once.js", None).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_guest_page_preloads_the_versioned_package_and_revalidates() {
    let site = site().await;
    let v = &site.version;
    let r = get(&site, "/", Some("br")).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header(&r, "cache-control"), "no-cache");
    assert!(header(&r, "content-type").starts_with("text/html"));
    let etag = header(&r, "etag");
    assert!(!etag.is_empty());
    let html = r.text().await.unwrap();
    assert!(!html.contains("upload-once:preload"), "{html}");
    let map = format!(
        r#"<script type="importmap">{{"imports":{{"/pkg/upload_once.js":"/pkg/v/{v}/upload_once.js"}}}}</script>"#
    );
    assert!(html.contains(&map), "{html}");
    assert!(html.contains(&format!(r#"<link rel="modulepreload" href="/pkg/v/{v}/upload_once.js">"#)));
    assert!(html.contains(&format!(
        r#"<link rel="preload" href="/pkg/v/{v}/upload_once_bg.wasm" as="fetch" type="application/wasm" crossorigin>"#
    )));
    assert!(html.find("importmap").unwrap() < html.find("type=\"module\"").unwrap(), "the map before any module");
    assert_eq!(get(&site, "/index.html", None).await.text().await.unwrap(), html);

    let again = site.server.http.get(site.server.url("/")).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_copy_older_than_its_file_is_never_served() {
    let site = site().await;
    let r = get(&site, "/style.css", Some("br, gzip")).await;
    assert_eq!(header(&r, "content-encoding"), "");
    assert_eq!(r.text().await.unwrap(), "body { color: black }");
}

/// The real guest page asks for the package after its own scripts: over
/// HTTP/1.1 (six connections) the scripts its pick button needs take the
/// first connections, then the `.wasm` (the long download), then the
/// package's JS (wanted only once the `.wasm` is in).
#[test]
fn the_guest_page_preloads_the_package_after_its_own_scripts() {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../www/index.html")).unwrap();
    let html = upload_once_server::routes::assets::guest_page(&source, Some("0123456789abcdef"));
    assert!(!html.contains("upload-once:preload"), "{html}");
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("{needle} is not in {html}"));
    let map = at(r#"<script type="importmap">"#);
    let wasm = at(
        r#"<link rel="preload" href="/pkg/v/0123456789abcdef/upload_once_bg.wasm" as="fetch" type="application/wasm" crossorigin>"#,
    );
    let glue = at(r#"<link rel="modulepreload" href="/pkg/v/0123456789abcdef/upload_once.js">"#);
    let own: Vec<usize> = ["guest.js", "common.js", "i18n.js", "i18n/en.js"]
        .iter()
        .map(|f| at(&format!(r#"<link rel="modulepreload" href="{f}">"#)))
        .collect();
    assert!(own.iter().all(|&o| map < o && o < wasm), "the map first, the page's scripts before the package: {html}");
    assert!(wasm < glue, "the .wasm before the package's JS: {html}");
    assert!(glue < at(r#"<script type="module""#), "{html}");
    // Six requests (HTTP/1.1's connections to a host) hold the stylesheet and
    // the scripts the pick button needs; the package comes after them.
    let before_package = html[..wasm].matches("<link rel=\"stylesheet\"").count() + own.len();
    assert!(before_package <= 6, "{before_package} requests before the package: {html}");
}
