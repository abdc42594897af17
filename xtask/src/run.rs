//! The demo and the test layers.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::server::{Server, build_server, port_or_free, target_dir};
use crate::setup::{Result, ensure_all, ensure_chromium, ensure_npm, extend_path, root, sh};

/// Every test layer, in the order `cargo xtask test` runs them.
pub const LAYERS: &[&str] = &["core", "server", "browser", "e2e"];

/// Builds the npm package into `out` for a wasm-pack target.
pub fn build_package(target: &str, out: &str) -> Result {
    sh(Command::new("wasm-pack")
        .args(["build", "--target", target, "--release", "--out-dir", out, "--no-pack"])
        .current_dir(root())
        // Debian's wasm-opt (binaryen 108) corrupts wasm-bindgen's externref
        // table; without the reference-types feature wasm-bindgen keeps JS
        // values in a JS-side heap instead, and the optimised package works.
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS", "-C target-feature=-reference-types"))?;
    // Real package metadata beside the generated code.
    crate::run::write_package_json(&root().join(out))
}

/// Writes the npm package.json (name, description, license, repository,
/// types, exports) into a built package directory.
pub fn write_package_json(dir: &Path) -> Result {
    let version = env!("CARGO_PKG_VERSION");
    let json = format!(
        r#"{{
  "name": "upload-once",
  "version": "{version}",
  "description": "Browser uploads stored exactly once: durable attempt ids in IndexedDB, direct-to-storage transfer with progress, idempotent confirm, reconcile after reload.",
  "license": "MIT OR Apache-2.0",
  "repository": {{ "type": "git", "url": "https://github.com/upload-once/upload-once" }},
  "keywords": ["upload", "resumable", "idempotent", "indexeddb", "offline", "wasm"],
  "type": "module",
  "main": "upload_once.js",
  "module": "upload_once.js",
  "types": "upload_once.d.ts",
  "exports": {{ ".": {{ "types": "./upload_once.d.ts", "default": "./upload_once.js" }}, "./upload_once_bg.wasm": "./upload_once_bg.wasm" }},
  "files": ["upload_once_bg.wasm", "upload_once.js", "upload_once_bg.js", "upload_once.d.ts", "upload_once_bg.wasm.d.ts", "snippets/"],
  "sideEffects": ["./upload_once.js", "./snippets/*"]
}}
"#
    );
    std::fs::write(dir.join("package.json"), json).map_err(|e| format!("package.json: {e}"))
}

/// `cargo xtask demo`
pub fn demo(args: &[String]) -> Result {
    ensure_all(false)?;
    build_package("web", "pkg")?;
    sh(Command::new("cargo").args(["build", "-p", "upload-once-server"]).current_dir(root()))?;
    let binary = target_dir().join("debug/upload-once-server");
    let listen = args.iter().position(|a| a == "--listen").and_then(|i| args.get(i + 1)).cloned();
    let mut cmd = Command::new(binary);
    cmd.current_dir(root());
    if listen.is_none() {
        cmd.args(["--listen", "127.0.0.1:8080"]);
    }
    cmd.args(["--demo-event", "wedding", "--www-dir", "www", "--pkg-dir", "pkg", "--data-dir", "data"]).args(args);
    println!("Starting upload-once-server; stop it with Ctrl-C.");
    sh(&mut cmd)
}

fn layer_core() -> Result {
    sh(Command::new("cargo").args(["test", "-p", "upload-once-core"]).current_dir(root()))
}

fn layer_server() -> Result {
    sh(Command::new("cargo").args(["test", "-p", "upload-once-server"]).current_dir(root()))
}

/// wasm-bindgen-test in headless Chromium, against a real reference server.
fn layer_browser() -> Result {
    let (_, chromedriver) = ensure_chromium()?;
    let binary = build_server()?;
    let page_port = port_or_free(18_765);
    let page_origin = format!("http://127.0.0.1:{page_port}");
    // Signed URLs live 2 s here, so the expired-URL test does not wait long.
    let server = Server::start(
        &binary,
        "browser",
        &["--allowed-origin".into(), page_origin, "--url-ttl".into(), "2s".into(), "--www-dir".into(), "none".into()],
    )?;
    sh(Command::new("cargo")
        .args(["test", "--target", "wasm32-unknown-unknown", "-p", "upload-once"])
        .current_dir(root())
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", "wasm-bindgen-test-runner")
        .env("CHROMEDRIVER", chromedriver)
        .env("WASM_BINDGEN_TEST_ADDRESS", format!("127.0.0.1:{page_port}"))
        .env("WASM_BINDGEN_TEST_TIMEOUT", "90")
        .env("UPLOAD_ONCE_TEST_API", &server.base)
        .env("UPLOAD_ONCE_TEST_ADMIN", &server.admin))
}

/// Playwright (playwright-core) driving Debian's Chromium through the real
/// pages, and the Vite example app.
fn layer_e2e() -> Result {
    let (chromium, _) = ensure_chromium()?;
    build_package("web", "pkg")?;
    build_package("bundler", "pkg-bundler")?;
    let e2e = root().join("tests/e2e");
    ensure_npm(&e2e)?;
    let example = root().join("examples/vite");
    ensure_npm(&example)?;
    // `npm run build` type-checks against the package's .d.ts (strict), then bundles.
    sh(Command::new("npm").args(["run", "build", "--silent"]).current_dir(&example))?;
    let binary = build_server()?;
    sh(Command::new("node")
        .args(["--test", "--test-concurrency=1", "--test-reporter=spec"])
        .current_dir(&e2e)
        .env("UPLOAD_ONCE_SERVER_BIN", binary)
        .env("UPLOAD_ONCE_CHROMIUM", chromium)
        .env("UPLOAD_ONCE_ROOT", root())
        .env("UPLOAD_ONCE_SCREENSHOTS", target_dir().join("e2e-screenshots")))
}

/// `cargo xtask test [layer ...]`
pub fn test(args: &[String]) -> Result {
    extend_path();
    let layers: Vec<&str> = if args.is_empty() { LAYERS.to_vec() } else { args.iter().map(String::as_str).collect() };
    if let Some(unknown) = layers.iter().find(|l| !LAYERS.contains(l)) {
        return Err(format!("unknown test layer `{unknown}` (layers: {})", LAYERS.join(", ")));
    }
    ensure_all(layers.iter().any(|l| matches!(*l, "browser" | "e2e")))?;
    let mut report = Vec::new();
    for layer in &layers {
        let started = Instant::now();
        eprintln!("\n=== test layer: {layer} ===");
        let result = match *layer {
            "core" => layer_core(),
            "server" => layer_server(),
            "browser" => layer_browser(),
            "e2e" => layer_e2e(),
            _ => unreachable!("checked above"),
        };
        let secs = started.elapsed().as_secs();
        report.push(format!("{layer:>8}: {} ({secs} s)", if result.is_ok() { "ok" } else { "FAILED" }));
        if let Err(e) = result {
            eprintln!("\n{}", report.join("\n"));
            return Err(format!("test layer `{layer}` failed: {e}"));
        }
    }
    eprintln!("\n{}\nall test layers passed", report.join("\n"));
    Ok(())
}
