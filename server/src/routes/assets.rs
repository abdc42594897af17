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
//!   starts downloading with the HTML, not after the JS has run.

use std::path::{Path, PathBuf};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::state::AppState;

/// Where the guest page asks for its preloads.
pub const PRELOAD_PLACEHOLDER: &str = "<!-- upload-once:preload -->";

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

/// The guest page with its preloads for package `version`.
pub fn guest_page(html: &str, version: Option<&str>) -> String {
    let preload = match version {
        Some(v) => format!(
            r#"<script type="importmap">{{"imports":{{"/pkg/{PKG_JS}":"/pkg/v/{v}/{PKG_JS}"}}}}</script>
  <link rel="modulepreload" href="/pkg/v/{v}/{PKG_JS}">
  <link rel="preload" href="/pkg/v/{v}/{PKG_WASM}" as="fetch" type="application/wasm" crossorigin>"#
        ),
        None => String::new(),
    };
    html.replacen(PRELOAD_PLACEHOLDER, &preload, 1)
}

async fn serve_guest_page(www: PathBuf, version: Option<String>, headers: HeaderMap) -> Response {
    let Ok(html) = tokio::fs::read_to_string(www.join("index.html")).await else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let page = guest_page(&html, version.as_deref());
    let etag = format!("\"{}\"", hex::encode(&Sha256::digest(page.as_bytes())[..8]));
    let mut response = if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes()) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], Body::from(page)).into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(REVALIDATE));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    response
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
            let (page_www, page_version) = (www.clone(), version.clone());
            let guest =
                get(move |headers: HeaderMap| serve_guest_page(page_www.clone(), page_version.clone(), headers));
            router.route("/", guest.clone()).route("/index.html", guest).fallback_service(
                tower::ServiceBuilder::new()
                    .layer(cache(REVALIDATE))
                    .layer(vary())
                    .service(static_files(www).not_found_service(not_found)),
            )
        }
        None => router.fallback_service(not_found),
    }
}
