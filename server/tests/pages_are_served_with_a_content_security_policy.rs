//! The pages (the repository's own `www/`) go out with a
//! Content-Security-Policy that allows no inline script but the guest page's
//! import map (by the exact hash of the map in the page sent), compiles the
//! `.wasm` (`'wasm-unsafe-eval'`), lets requests and media reach only this
//! origin, where upload and media URLs point (the public URL, the bucket)
//! and the API origins `--page-api-origin` allows, and refuses plugins,
//! `<base>` and framing; with `Referrer-Policy: no-referrer`. The pages
//! themselves carry no inline script, event handler or style attribute, and
//! get the allowed API origins in a `<meta>`.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use reqwest::StatusCode;
use sha2::{Digest, Sha256};
use support::*;
use upload_once_server::config::{Config, S3UrlStyle, StorageKind};
use upload_once_server::routes::assets::PagePolicy;
use uuid::Uuid;

const PAGES: [&str; 4] = ["/", "/index.html", "/host.html", "/wall.html"];

/// The repository's pages.
fn www() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../www")
}

struct Site {
    _dir: tempfile::TempDir,
    server: TestServer,
}

/// The real pages and a small package, with `configure` applied.
async fn site(configure: impl FnOnce(&mut Config) + Send + 'static) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("upload_once_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(pkg.join("upload_once.js"), b"export default function init() {}").unwrap();
    let mut options = Options::default();
    options.pkg_dir = Some(pkg);
    options.www_dir = Some(www());
    options.configure = Some(Box::new(configure));
    Site { _dir: dir, server: TestServer::start_with(options).await }
}

struct Served {
    csp: BTreeMap<String, Vec<String>>,
    referrer: String,
    html: String,
}

async fn page(site: &Site, path: &str) -> Served {
    let r = site.server.http.get(site.server.url(path)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    let header = |name: &str| r.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let csp = header("content-security-policy");
    assert!(!csp.is_empty(), "{path} has a Content-Security-Policy");
    assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
    let referrer = header("referrer-policy");
    Served { csp: directives(&csp), referrer, html: r.text().await.unwrap() }
}

/// A policy's directives and their sources.
fn directives(csp: &str) -> BTreeMap<String, Vec<String>> {
    csp.split(';')
        .filter_map(|d| {
            let mut words = d.split_whitespace().map(str::to_owned);
            Some((words.next()?, words.collect()))
        })
        .collect()
}

fn sources<'a>(served: &'a Served, directive: &str) -> &'a [String] {
    served.csp.get(directive).unwrap_or_else(|| panic!("no {directive} in {:?}", served.csp))
}

/// The texts of the inline `<script>`s (those without `src`).
fn inline_scripts(html: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        let tag_end = start + rest[start..].find('>').unwrap();
        let tag = &rest[start..=tag_end];
        let close = tag_end + rest[tag_end..].find("</script>").unwrap();
        if !tag.contains(" src=") {
            found.push((tag.to_owned(), rest[tag_end + 1..close].to_owned()));
        }
        rest = &rest[close..];
    }
    found
}

fn hash_source(text: &str) -> String {
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes())))
}

fn origin(url: &str) -> String {
    url::Url::parse(url).unwrap().origin().ascii_serialization()
}

#[tokio::test]
async fn every_page_has_the_policy_and_sends_no_referrer() {
    let site = site(|_| {}).await;
    for path in PAGES {
        let served = page(&site, path).await;
        assert_eq!(served.referrer, "no-referrer", "{path}");
        assert_eq!(sources(&served, "default-src"), ["'none'"], "{path}");
        let script = sources(&served, "script-src");
        for needed in ["'self'", "'wasm-unsafe-eval'"] {
            assert!(script.contains(&needed.to_owned()), "{path}: script-src {script:?} lacks {needed}");
        }
        for unsafe_source in ["'unsafe-inline'", "'unsafe-eval'", "*", "data:", "blob:"] {
            assert!(!script.contains(&unsafe_source.to_owned()), "{path}: script-src {script:?} has {unsafe_source}");
        }
        assert_eq!(sources(&served, "style-src"), ["'self'"], "{path}: styles come from style.css alone");
        for directive in ["img-src", "media-src"] {
            let allowed = sources(&served, directive);
            for needed in ["'self'", "blob:", "data:"] {
                assert!(allowed.contains(&needed.to_owned()), "{path}: {directive} {allowed:?} lacks {needed}");
            }
        }
        assert!(sources(&served, "connect-src").contains(&"'self'".to_owned()), "{path}");
        for (directive, value) in [("object-src", "'none'"), ("base-uri", "'none'"), ("frame-ancestors", "'none'")] {
            assert_eq!(sources(&served, directive), [value], "{path}");
        }
        // Nothing inline but what the hash allows: no handler or style attribute.
        for attribute in [" style=", " onclick=", " onload=", " onerror=", " onsubmit=", " onchange=", "javascript:"] {
            assert!(!served.html.contains(attribute), "{path} has `{attribute}`");
        }
        assert!(!served.html.contains("upload-once:api-origins"), "{path}: the placeholder is filled");
        assert!(!served.html.contains("upload-once-api-origins"), "{path}: no API origins allowed, none listed");
    }
}

#[tokio::test]
async fn the_import_map_is_the_only_inline_script_and_its_hash_is_in_the_policy() {
    let site = site(|_| {}).await;
    for path in PAGES {
        let served = page(&site, path).await;
        let inline = inline_scripts(&served.html);
        let script = sources(&served, "script-src");
        let hashes: Vec<&String> = script.iter().filter(|s| s.starts_with("'sha256-")).collect();
        if path == "/host.html" || path == "/wall.html" {
            assert_eq!(inline, [], "{path} has no inline script");
            assert_eq!(hashes, Vec::<&String>::new(), "{path} allows no inline script");
            continue;
        }
        assert_eq!(inline.len(), 1, "{path}: the import map alone: {inline:?}");
        let (tag, map) = &inline[0];
        assert_eq!(tag, r#"<script type="importmap">"#);
        assert!(map.contains("/pkg/v/"), "{path}: the map points at the versioned package: {map}");
        assert_eq!(hashes, [&hash_source(map)], "{path}: the hash of the map as sent");
    }
    // A revalidation keeps the policy.
    let first = site.server.http.get(site.server.url("/")).send().await.unwrap();
    let (etag, csp) = (first.headers()["etag"].clone(), first.headers()["content-security-policy"].clone());
    let again = site.server.http.get(site.server.url("/")).header("if-none-match", etag).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["content-security-policy"], csp);
}

#[tokio::test]
async fn upload_and_media_urls_are_within_the_policy() {
    let site = site(|_| {}).await;
    let served = page(&site, "/").await;
    let own = origin(&site.server.base);
    let allowed = |directive: &str, url: &str| {
        let o = origin(url);
        o == own || sources(&served, directive).contains(&o)
    };
    let guest = site.server.guest().await;
    let attempt = guest.authorize(Uuid::new_v4(), 100).await;
    let upload = attempt.upload.as_ref().and_then(|u| u.put()).expect("a single PUT");
    assert!(allowed("connect-src", &upload.url), "the upload URL {} is in connect-src {:?}", upload.url, served.csp);
    let media = site.server.state.links.media_url(0, Uuid::new_v4());
    for directive in ["img-src", "media-src"] {
        assert!(allowed(directive, &media), "{media} is in {directive}");
    }
}

#[tokio::test]
async fn the_allowed_api_origins_are_in_each_page_and_its_policy() {
    let api = ["https://api.example.com", "http://127.0.0.1:9"];
    let site = site(move |c| c.page_api_origins = api.map(str::to_owned).to_vec()).await;
    for path in PAGES {
        let served = page(&site, path).await;
        let meta = format!(r#"<meta name="upload-once-api-origins" content="{}">"#, api.join(" "));
        assert!(served.html.contains(&meta), "{path} lists them: {}", served.html);
        let connect = sources(&served, "connect-src");
        for origin in api {
            assert!(connect.contains(&origin.to_owned()), "{path}: connect-src {connect:?} has {origin}");
        }
    }
}

#[test]
fn the_policy_names_the_public_url_and_the_bucket() {
    let mut config = Config::defaults();
    config.public_url = Some("https://up.example.com/".into());
    config.storage = StorageKind::S3;
    config.s3_endpoint = Some("https://s3.eu-west-1.amazonaws.com".into());
    config.s3_bucket = Some("my-uploads".into());
    config.s3_url_style = S3UrlStyle::VirtualHost;
    let policy = PagePolicy::from_config(&config);
    assert_eq!(policy.storage_origins, ["https://up.example.com", "https://my-uploads.s3.eu-west-1.amazonaws.com"]);

    config.s3_url_style = S3UrlStyle::Path;
    config.s3_endpoint = Some("http://127.0.0.1:9000/prefix".into());
    let csp = directives(&PagePolicy::from_config(&config).content_security_policy(&[]));
    for directive in ["connect-src", "img-src", "media-src"] {
        assert!(csp[directive].contains(&"http://127.0.0.1:9000".to_owned()), "{directive}: {:?}", csp[directive]);
    }

    config.page_api_origins = vec!["https://api.example.com/v1".into()];
    assert!(config.validate().is_err(), "an API origin is an origin, without a path");
}
