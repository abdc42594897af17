//! The web pages (`www/`) and the npm package (`pkg/`), served for a first
//! visit on a slow phone network:
//!
//! - **Precompressed.** `cargo xtask` writes a brotli and a gzip copy beside
//!   each file (`x.js.br`, `x.js.gz`); they are sent as they are, chosen by
//!   `Accept-Encoding` (with `Vary: Accept-Encoding`). A copy older than its
//!   file (someone edited the file) is removed at start, never served stale.
//!   The `.wasm` goes out as `application/wasm`, so it compiles while it
//!   streams in.
//! - **Cached.** The package is also served under `/pkg/v/<version>/`, where
//!   `<version>` is a hash of its files: those answers are `immutable` for a
//!   year. Pages and the unversioned `/pkg/` revalidate (`no-cache`).
//! - **Preloaded.** The guest page (`/`, `/index.html`) is sent with its
//!   `<!-- upload-once:preload -->` placeholder replaced by an import map
//!   that points `/pkg/upload_once.js` at the versioned copy, a
//!   `modulepreload` of it and a `preload` of the `.wasm` (CORS mode, so
//!   wasm-bindgen's `fetch` in `init` takes that response): the `.wasm`
//!   starts downloading with the HTML, not after the JS has run. A page with
//!   a `<!-- upload-once:preload-package -->` placeholder gets the package's
//!   preloads there instead (the guest page: after its own scripts'
//!   preloads, so its pick button, which works before the uploader is open,
//!   waits for none of the package's bytes).
//! - **Under a Content-Security-Policy.** Every page of the server (each
//!   `*.html` at the top of `www/` that carries one of the placeholders
//!   below, and `/` for `index.html`) is sent with the policy of
//!   [`PagePolicy::content_security_policy`]: scripts from this origin only
//!   (plus the exact hash of the guest page's import map, the one inline
//!   script), `'wasm-unsafe-eval'` to compile the `.wasm`, requests and media
//!   to this origin, the public URL's and the bucket's, no plugins, no
//!   `<base>`, no framing; and `Referrer-Policy: no-referrer` (the host's
//!   link carries its token, the guest's the guest code). Each page's
//!   `<!-- upload-once:api-origins -->` becomes a `<meta
//!   name="upload-once-api-origins">` listing `--page-api-origin`: the only
//!   origins besides their own the pages let `?api=` name. Pages are
//!   rendered per request, so they go out uncompressed.
//! - **Cached for repeat visits by a service worker.** `www/sw.js` goes out
//!   at `/sw.js` (scope `/`, the guest page's) with its `"upload-once:build"`
//!   placeholder replaced by the build it caches: `version`, a hash of every
//!   file of `www/`, the guest page as it is rendered and the package's
//!   version, and `pkg`, the package's version. A deploy that changes any of
//!   them changes the worker, which then replaces its cache. It is sent
//!   `no-cache` (with an `ETag`), so the browser's update check on each
//!   visit is one revalidation, and with a policy of its own (`connect-src
//!   'self'`: it fetches from this origin only).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::config::{Config, S3UrlStyle, StorageKind};
use crate::state::AppState;

/// Where the guest page asks for its preloads.
pub const PRELOAD_PLACEHOLDER: &str = "<!-- upload-once:preload -->";

/// Where the guest page asks for the preloads of the package (its JS and
/// `.wasm`): after the preloads of its own scripts, so that over HTTP/1.1
/// (six connections to a host) the package takes the first connections
/// they free, and the scripts the pick button needs do not share the line
/// with it.
pub const PACKAGE_PRELOAD_PLACEHOLDER: &str = "<!-- upload-once:preload-package -->";

/// Where a page asks for the origins `?api=` may name besides its own.
pub const API_ORIGINS_PLACEHOLDER: &str = "<!-- upload-once:api-origins -->";

/// The `<meta name>` the pages read the allowed API origins from.
pub const API_ORIGINS_META: &str = "upload-once-api-origins";

/// Where the service worker asks for its build: a JavaScript string literal.
pub const BUILD_PLACEHOLDER: &str = "\"upload-once:build\"";

/// The service worker's file in `www/`, served at `/sw.js`.
pub const SERVICE_WORKER: &str = "sw.js";

/// The module service worker in `www/` where the browser has Background
/// Fetch, served at `/sw-background.js`: it imports `/sw.js` and the package.
pub const BACKGROUND_WORKER: &str = "sw-background.js";

/// The `Content-Security-Policy` of the service worker's script: it only
/// fetches the guest page's files from this origin.
pub const SERVICE_WORKER_POLICY: &str = "default-src 'none'; connect-src 'self'";

/// The package's entry points.
const PKG_JS: &str = "upload_once.js";
const PKG_WASM: &str = "upload_once_bg.wasm";

/// `Cache-Control` of content-addressed files.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// `Cache-Control` of everything else: use it, but ask first.
const REVALIDATE: &str = "no-cache";

/// The package's version: a hash of its `.wasm` and JS, `None` when the
/// package is not built.
pub fn package_version(pkg: &Path) -> Option<String> {
    let mut hash = Sha256::new();
    for name in [PKG_WASM, PKG_JS] {
        hash.update(std::fs::read(pkg.join(name)).ok()?);
    }
    Some(hex::encode(&hash.finalize()[..8]))
}

/// Removes precompressed copies (`.br`, `.gz`) whose file is gone or newer:
/// they would be served instead of it. Returns how many went.
pub fn drop_stale_copies(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut dropped = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            dropped += drop_stale_copies(&path);
            continue;
        }
        let Some(source) = ["br", "gz"]
            .iter()
            .find(|ext| path.extension().is_some_and(|e| e == **ext))
            .map(|_| path.with_extension(""))
        else {
            continue;
        };
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let stale = match (modified(&source), modified(&path)) {
            (Some(src), Some(copy)) => src > copy,
            // Not a copy of anything here (`archive.tar.gz`?): left alone.
            (None, _) => false,
            _ => true,
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            tracing::info!(path = %path.display(), "removed a precompressed copy older than its file");
            dropped += 1;
        }
    }
    dropped
}

/// Static files of `dir`, precompressed copies first.
fn static_files(dir: PathBuf) -> ServeDir {
    ServeDir::new(dir).precompressed_br().precompressed_gzip().call_fallback_on_method_not_allowed(true)
}

/// The guest page's import map for package `version`: it points the
/// package's entry at the versioned copy.
pub fn import_map(version: &str) -> String {
    format!(r#"{{"imports":{{"/pkg/{PKG_JS}":"/pkg/v/{version}/{PKG_JS}"}}}}"#)
}

/// The CSP source that allows the inline script whose text is exactly
/// `text`: `'sha256-<base64>'`.
pub fn script_hash(text: &str) -> String {
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes())))
}

/// The guest page with its preloads for package `version`: the import map
/// at [`PRELOAD_PLACEHOLDER`], the package's JS and `.wasm` at
/// [`PACKAGE_PRELOAD_PLACEHOLDER`] when the page has one (else with the
/// import map).
pub fn guest_page(html: &str, version: Option<&str>) -> String {
    let (map, package) = match version {
        Some(v) => (
            format!(r#"<script type="importmap">{}</script>"#, import_map(v)),
            format!(
                r#"<link rel="preload" href="/pkg/v/{v}/{PKG_WASM}" as="fetch" type="application/wasm" crossorigin>
  <link rel="modulepreload" href="/pkg/v/{v}/{PKG_JS}">"#
            ),
        ),
        None => (String::new(), String::new()),
    };
    if html.contains(PACKAGE_PRELOAD_PLACEHOLDER) {
        html.replacen(PRELOAD_PLACEHOLDER, &map, 1).replacen(PACKAGE_PRELOAD_PLACEHOLDER, &package, 1)
    } else {
        let both = if package.is_empty() { map } else { format!("{map}\n  {package}") };
        html.replacen(PRELOAD_PLACEHOLDER, &both, 1)
    }
}

/// The origin (`scheme://host[:port]`) of a URL, `None` for anything
/// without one.
fn origin_of(url: &url::Url) -> Option<String> {
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// What the pages may reach besides their own origin.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PagePolicy {
    /// Where signed upload URLs and media URLs point: the public URL's
    /// origin, and with S3 storage the bucket's (uploads go there, media
    /// URLs redirect there).
    pub storage_origins: Vec<String>,
    /// The origins `?api=` may name (`--page-api-origin`).
    pub api_origins: Vec<String>,
}

impl PagePolicy {
    /// The origins besides this one that pages may reach: the bucket's, the
    /// public URL's and the API's.
    fn other_origins(&self) -> Vec<&str> {
        let mut others: Vec<&str> = Vec::new();
        for origin in self.storage_origins.iter().chain(&self.api_origins) {
            if !others.contains(&origin.as_str()) {
                others.push(origin);
            }
        }
        others
    }

    /// The `Content-Security-Policy` of the service worker that settles
    /// Background Fetches (`/sw-background.js`): the package from this
    /// origin, compiled (`'wasm-unsafe-eval'`), and requests to this origin
    /// and the API's (the confirms; it sends no bytes itself).
    pub fn background_worker_policy(&self) -> String {
        let api: String = self.api_origins.iter().map(|o| format!(" {o}")).collect();
        format!("default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'{api}")
    }

    /// The policy of a configuration.
    pub fn from_config(config: &Config) -> PagePolicy {
        let mut storage = Vec::new();
        if let Some(origin) = url::Url::parse(&config.public_base()).ok().as_ref().and_then(origin_of) {
            storage.push(origin);
        }
        if config.storage == StorageKind::S3 {
            if let Some(mut endpoint) = config.s3_endpoint.as_deref().and_then(|e| url::Url::parse(e).ok()) {
                // As rusty-s3 forms a virtual-hosted bucket's URLs.
                if config.s3_url_style == S3UrlStyle::VirtualHost {
                    let host = format!(
                        "{}.{}",
                        config.s3_bucket.as_deref().unwrap_or_default(),
                        endpoint.host_str().unwrap_or_default()
                    );
                    if endpoint.set_host(Some(&host)).is_err() {
                        tracing::warn!(host, "the bucket's host is not a valid host: left out of the pages' policy");
                    }
                }
                storage.extend(origin_of(&endpoint));
            }
        }
        storage.dedup();
        PagePolicy { storage_origins: storage, api_origins: config.page_api_origins.clone() }
    }

    /// The `Content-Security-Policy` of a page whose inline scripts (an
    /// import map) are exactly `inline_scripts`.
    ///
    /// Styles come from `style.css` alone: the pages set no `style`
    /// attribute (a style set from script through the CSSOM, such as a
    /// progress bar's width, is not governed by the policy).
    pub fn content_security_policy(&self, inline_scripts: &[&str]) -> String {
        let others = self.other_origins();
        let others: String = others.iter().map(|o| format!(" {o}")).collect();
        let hashes: String = inline_scripts.iter().map(|s| format!(" {}", script_hash(s))).collect();
        [
            "default-src 'none'".to_owned(),
            // `'wasm-unsafe-eval'` compiles the package's `.wasm`; it allows
            // no `eval` of JavaScript.
            format!("script-src 'self' 'wasm-unsafe-eval'{hashes}"),
            "style-src 'self'".to_owned(),
            // blob: previews of picked files, data: the favicon; the
            // bucket's presigned media reads.
            format!("img-src 'self' blob: data:{others}"),
            format!("media-src 'self' blob: data:{others}"),
            // The API (`?api=`), signed upload URLs, the live wall.
            format!("connect-src 'self'{others}"),
            // The guest page's service worker, `/sw.js` (without it the
            // worker would fall back to `script-src`); and the package's
            // timer worker, made from a Blob, whose timers a hidden tab's
            // throttling does not slow (`wakeAfter` in src/glue.js).
            "worker-src 'self' blob:".to_owned(),
            // The guest page's web app manifest (installing it, sharing
            // photos to it from the gallery).
            "manifest-src 'self'".to_owned(),
            "form-action 'self'".to_owned(),
            "object-src 'none'".to_owned(),
            "base-uri 'none'".to_owned(),
            "frame-ancestors 'none'".to_owned(),
        ]
        .join("; ")
    }
}

/// A page as it is sent: the HTML with its placeholders filled, and its
/// `Content-Security-Policy`.
pub struct Page {
    /// The HTML.
    pub html: String,
    /// The policy, with the hash of the import map the HTML carries.
    pub csp: String,
}

/// Fills a page's placeholders (the guest page's preloads for package
/// `version`, the allowed API origins) and makes its policy.
pub fn render_page(html: &str, version: Option<&str>, policy: &PagePolicy) -> Page {
    let mut inline = Vec::new();
    let map = version.map(import_map);
    let mut html = if html.contains(PRELOAD_PLACEHOLDER) {
        inline.extend(map.as_deref());
        guest_page(html, version)
    } else {
        html.to_owned()
    };
    let meta = if policy.api_origins.is_empty() {
        String::new()
    } else {
        // Origins are checked at start (scheme, host, port): nothing to escape.
        format!(r#"<meta name="{API_ORIGINS_META}" content="{}">"#, policy.api_origins.join(" "))
    };
    html = html.replacen(API_ORIGINS_PLACEHOLDER, &meta, 1);
    let csp = policy.content_security_policy(&inline);
    Page { html, csp }
}

async fn serve_page(config: Arc<Config>, file: PathBuf, version: Option<String>, headers: HeaderMap) -> Response {
    let Ok(html) = tokio::fs::read_to_string(&file).await else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let page = render_page(&html, version.as_deref(), &PagePolicy::from_config(&config));
    let mut hash = Sha256::new();
    hash.update(page.html.as_bytes());
    hash.update(page.csp.as_bytes());
    let etag = format!("\"{}\"", hex::encode(&hash.finalize()[..8]));
    let mut response = if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes()) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], Body::from(page.html)).into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(REVALIDATE));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&page.csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// The files of `dir` and its folders, by their path under it (`under`),
/// without the precompressed copies.
fn site_files(dir: &Path, under: &str, found: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let (path, name) = (entry.path(), entry.file_name().to_string_lossy().into_owned());
        if path.is_dir() {
            site_files(&path, &format!("{under}{name}/"), found);
        } else if !(name.ends_with(".br") || name.ends_with(".gz")) {
            found.push((format!("{under}{name}"), path));
        }
    }
}

/// The version of what the service worker caches: a hash of every file of
/// `www` (by path and content), of the guest page as it is sent (`guest`:
/// its HTML and policy, which depend on the configuration) and of the
/// package's version.
pub fn site_version(www: &Path, guest: Option<&Page>, package: Option<&str>) -> String {
    let mut files = Vec::new();
    site_files(www, "", &mut files);
    files.sort();
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(package.unwrap_or_default().as_bytes());
    if let Some(page) = guest {
        field(page.html.as_bytes());
        field(page.csp.as_bytes());
    }
    for (name, path) in files {
        field(name.as_bytes());
        field(&std::fs::read(path).unwrap_or_default());
    }
    hex::encode(&hash.finalize()[..8])
}

/// The service worker `sw` (the text of `www/sw.js`) with its build filled
/// in: the site's `version` and the package's.
pub fn service_worker(sw: &str, version: &str, package: Option<&str>) -> String {
    let package = package.map_or_else(|| "null".to_owned(), |p| format!("\"{p}\""));
    sw.replacen(BUILD_PLACEHOLDER, &format!(r#"{{"version":"{version}","pkg":{package}}}"#), 1)
}

async fn serve_service_worker(
    config: Arc<Config>,
    www: PathBuf,
    package: Option<String>,
    headers: HeaderMap,
) -> Response {
    let policy = PagePolicy::from_config(&config);
    // A few small files, read on each visit's update check.
    let built = tokio::task::spawn_blocking(move || {
        let sw = std::fs::read_to_string(www.join(SERVICE_WORKER)).ok()?;
        let guest = std::fs::read_to_string(www.join("index.html"))
            .ok()
            .map(|html| render_page(&html, package.as_deref(), &policy));
        let version = site_version(&www, guest.as_ref(), package.as_deref());
        Some(service_worker(&sw, &version, package.as_deref()))
    })
    .await;
    let Ok(Some(body)) = built else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let etag = format!("\"{}\"", hex::encode(&Sha256::digest(body.as_bytes())[..8]));
    let mut response = if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes()) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], Body::from(body)).into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(REVALIDATE));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(SERVICE_WORKER_POLICY));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// `/sw-background.js`, with its policy (it is small: read on each update
/// check, revalidated like `/sw.js`).
async fn serve_background_worker(config: Arc<Config>, file: PathBuf) -> Response {
    let Ok(body) = tokio::fs::read(&file).await else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let policy = PagePolicy::from_config(&config).background_worker_policy();
    let mut response = ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], Body::from(body)).into_response();
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(REVALIDATE));
    if let Ok(v) = HeaderValue::from_str(&policy) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// The server's pages in `www`, by name: its top-level `*.html` files that
/// ask to be filled in (a placeholder). Any other file, a page of one's own
/// included, goes out as it is.
fn pages(www: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(www) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".html") && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)))
        .filter(|n| {
            std::fs::read_to_string(www.join(n))
                .is_ok_and(|html| html.contains(PRELOAD_PLACEHOLDER) || html.contains(API_ORIGINS_PLACEHOLDER))
        })
        .collect();
    names.sort();
    names
}

/// Adds the package (`/pkg/`, `/pkg/v/<version>/`) and the pages to
/// `router`, with `not_found` for paths no file matches.
pub fn mount(
    mut router: Router<AppState>,
    pkg: Option<PathBuf>,
    www: Option<PathBuf>,
    not_found: axum::routing::MethodRouter,
) -> Router<AppState> {
    let cache = |value: &'static str| {
        SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static(value))
    };
    // The precompressed copy depends on Accept-Encoding: caches must key on it.
    let vary = || SetResponseHeaderLayer::appending(header::VARY, HeaderValue::from_static("accept-encoding"));
    let mut version = None;
    if let Some(pkg) = pkg.filter(|p| p.is_dir()) {
        drop_stale_copies(&pkg);
        version = package_version(&pkg);
        if let Some(v) = &version {
            tracing::info!(version = %v, "serving the package under /pkg/v/{v}/");
            router = router.nest_service(
                &format!("/pkg/v/{v}"),
                tower::ServiceBuilder::new().layer(cache(IMMUTABLE)).layer(vary()).service(static_files(pkg.clone())),
            );
        }
        router = router.nest_service(
            "/pkg",
            tower::ServiceBuilder::new().layer(cache(REVALIDATE)).layer(vary()).service(static_files(pkg)),
        );
    }
    match www.filter(|p| p.is_dir()) {
        Some(www) => {
            drop_stale_copies(&www);
            for name in pages(&www) {
                let (file, page_version) = (www.join(&name), version.clone());
                let page = get(move |State(config): State<Arc<Config>>, headers: HeaderMap| {
                    serve_page(config, file.clone(), page_version.clone(), headers)
                });
                if name == "index.html" {
                    router = router.route("/", page.clone());
                }
                router = router.route(&format!("/{name}"), page);
            }
            if www.join(SERVICE_WORKER).is_file() {
                let (dir, package) = (www.clone(), version.clone());
                router = router.route(
                    &format!("/{SERVICE_WORKER}"),
                    get(move |State(config): State<Arc<Config>>, headers: HeaderMap| {
                        serve_service_worker(config, dir.clone(), package.clone(), headers)
                    }),
                );
            }
            if www.join(BACKGROUND_WORKER).is_file() {
                let file = www.join(BACKGROUND_WORKER);
                router = router.route(
                    &format!("/{BACKGROUND_WORKER}"),
                    get(move |State(config): State<Arc<Config>>| serve_background_worker(config, file.clone())),
                );
            }
            router.fallback_service(
                tower::ServiceBuilder::new()
                    .layer(cache(REVALIDATE))
                    .layer(vary())
                    .service(static_files(www).not_found_service(not_found)),
            )
        }
        None => router.fallback_service(not_found),
    }
}
