//! Installs what a fresh Debian machine lacks: the wasm target, the
//! wasm-bindgen CLI pinned to Cargo.lock's version, wasm-pack, binaryen's
//! wasm-opt, Chromium and ChromeDriver, Node.js and the npm packages of the
//! test suites. Everything present is left alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The error type of xtask: a message for the person at the terminal.
pub type Result<T = ()> = std::result::Result<T, String>;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_owned()
}

/// `~/.cargo/bin`, where `cargo install` puts binaries.
fn cargo_bin() -> PathBuf {
    match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home).join("bin"),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo/bin"),
    }
}

/// Where npm puts the `binaryen` package's `wasm-opt` (with the package
/// build's other Node tools, `xtask/minify`).
fn npm_binaryen_bin() -> PathBuf {
    root().join("xtask/minify/node_modules/.bin")
}

/// Makes sure child processes find freshly installed tools: ~/.cargo/bin,
/// and ahead of it npm's binaryen when it is installed (so wasm-pack runs
/// that wasm-opt, not an older one of Debian's further down PATH).
pub fn extend_path() {
    prepend_path(cargo_bin());
    if npm_binaryen_bin().join("wasm-opt").is_file() {
        prepend_path(npm_binaryen_bin());
    }
}

/// Puts `dir` first on PATH, unless it is there already.
fn prepend_path(dir: PathBuf) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths: Vec<PathBuf> = std::env::split_paths(&path).filter(|p| *p != dir).collect();
    if paths.first() == Some(&dir) {
        return;
    }
    paths.insert(0, dir);
    // SAFETY: xtask is single-threaded when it sets up its environment.
    unsafe { std::env::set_var("PATH", std::env::join_paths(paths).expect("valid PATH")) };
}

/// Prints and runs a command; an error if it fails.
pub fn sh(cmd: &mut Command) -> Result {
    eprintln!("+ {}", describe(cmd));
    let status = cmd.status().map_err(|e| format!("could not start `{}`: {e}", describe(cmd)))?;
    if status.success() { Ok(()) } else { Err(format!("`{}` failed ({status})", describe(cmd))) }
}

/// A command's text, for messages.
pub fn describe(cmd: &Command) -> String {
    let mut text = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}

/// Runs a command and returns its stdout, or `None` if it cannot run.
pub fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether a program is on PATH.
pub fn have(program: &str) -> bool {
    find(program).is_some()
}

/// Where a program is on PATH.
pub fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|p| p.is_file())
}

fn is_root() -> bool {
    output("id", &["-u"]).as_deref() == Some("0")
}

/// nginx (Debian's package), the cluster layer's load balancer; its path.
pub fn ensure_nginx() -> Result<PathBuf> {
    let found = || find("nginx").or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.is_file()));
    if let Some(nginx) = found() {
        return Ok(nginx);
    }
    apt_install(&["nginx"])?;
    found().ok_or_else(|| "nginx is installed but not found".to_owned())
}

/// Installs Debian packages (once `apt-get update`d per run).
pub fn apt_install(packages: &[&str]) -> Result {
    static UPDATED: OnceLock<()> = OnceLock::new();
    if !is_root() {
        return Err(format!("please install the Debian packages {} (or run as root)", packages.join(" ")));
    }
    if UPDATED.get().is_none() {
        sh(Command::new("apt-get").arg("update").arg("-q"))?;
        let _ = UPDATED.set(());
    }
    sh(Command::new("apt-get")
        // Waits for another apt (a second setup, the system's own) rather
        // than failing on its lock.
        .args(["-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q", "--no-install-recommends"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// The wasm-bindgen version Cargo.lock pins.
pub fn wasm_bindgen_version() -> Result<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).map_err(|e| format!("Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\"" {
            if let Some(v) = lines.next().and_then(|l| l.strip_prefix("version = \"")) {
                return Ok(v.trim_end_matches('"').to_owned());
            }
        }
    }
    Err("Cargo.lock has no wasm-bindgen".into())
}

/// The wasm32 target.
pub fn ensure_wasm_target() -> Result {
    let installed = output("rustup", &["target", "list", "--installed"]).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
        return Ok(());
    }
    sh(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))
}

/// The standard library's source, so the package build can rebuild `std`
/// without panic messages (see `run::build_package`).
pub fn ensure_rust_src() -> Result {
    let installed = output("rustup", &["component", "list", "--installed"]).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == "rust-src") {
        return Ok(());
    }
    sh(Command::new("rustup").args(["component", "add", "rust-src"]))
}

/// wasm-bindgen-cli at exactly Cargo.lock's version (the CLI and the crate
/// must never drift).
pub fn ensure_wasm_bindgen_cli() -> Result {
    let want = wasm_bindgen_version()?;
    let have = output("wasm-bindgen", &["--version"]).unwrap_or_default();
    if have.split_whitespace().nth(1) == Some(want.as_str()) && self::have("wasm-bindgen-test-runner") {
        return Ok(());
    }
    eprintln!("installing wasm-bindgen-cli {want} (a few minutes, once)");
    sh(Command::new("cargo").args(["install", "wasm-bindgen-cli", "--version", &want, "--force"]))
}

/// The oldest binaryen whose wasm-opt keeps wasm-bindgen's externref table
/// intact. Debian 12's (108) turns it into a table of functions, and a
/// package built with rustc's default features (reference types on) then
/// fails in `init`: `WebAssembly.Table.set(): Argument 1 is invalid for table`.
const WASM_OPT_MIN_VERSION: u32 = 116;

/// The version of the `wasm-opt` on PATH (`wasm-opt version 116 (…)`).
fn wasm_opt_version() -> Option<u32> {
    let out = output("wasm-opt", &["--version"])?;
    out.split_whitespace().skip_while(|w| *w != "version").nth(1)?.parse().ok()
}

/// wasm-pack, and the wasm-opt it runs (the first on PATH; it cannot
/// download its own tools here): the npm registry's `binaryen` package (a
/// prebuilt wasm-opt that runs on Node, installed in seconds with the
/// package build's Node tools and put first on PATH), or, only where Node
/// cannot be had, binaryen's own built from crates by `cargo install
/// wasm-opt` (a C++ build of about ten minutes on two cores).
pub fn ensure_wasm_pack() -> Result {
    if wasm_opt_version().is_none_or(|v| v < WASM_OPT_MIN_VERSION) {
        match ensure_node().and_then(|()| ensure_npm(&root().join("xtask/minify"))) {
            Ok(()) => extend_path(),
            Err(e) => {
                eprintln!("no wasm-opt from npm ({e}); building binaryen's from crates (several minutes, once)");
                if !have("c++") {
                    apt_install(&["g++"])?;
                }
                sh(Command::new("cargo").args(["install", "wasm-opt", "--locked"]))?;
            }
        }
        match wasm_opt_version() {
            Some(v) if v >= WASM_OPT_MIN_VERSION => {}
            found => {
                return Err(format!(
                    "wasm-opt {} comes first on PATH, older than {WASM_OPT_MIN_VERSION}: put {} before it",
                    found.map_or("?".into(), |v| v.to_string()),
                    npm_binaryen_bin().display()
                ));
            }
        }
    }
    if have("wasm-pack") {
        return Ok(());
    }
    sh(Command::new("cargo").args(["install", "wasm-pack"]))
}

/// Chromium and ChromeDriver from Debian.
pub fn ensure_chromium() -> Result<(PathBuf, PathBuf)> {
    let (chromium, driver) = (PathBuf::from("/usr/bin/chromium"), PathBuf::from("/usr/bin/chromedriver"));
    if !chromium.exists() || !driver.exists() {
        apt_install(&["chromium", "chromium-driver"])?;
    }
    Ok((chromium, driver))
}

/// Node.js and npm.
pub fn ensure_node() -> Result {
    if have("node") && have("npm") {
        return Ok(());
    }
    apt_install(&["nodejs", "npm"])
}

/// The npm packages of a directory (from its lock file when there is one).
pub fn ensure_npm(dir: &Path) -> Result {
    ensure_node()?;
    let marker = dir.join("node_modules/.package-lock.json");
    let lock = dir.join("package-lock.json");
    let fresh = match (std::fs::metadata(&marker), std::fs::metadata(&lock)) {
        (Ok(m), Ok(l)) => m.modified().ok() >= l.modified().ok(),
        _ => false,
    };
    if fresh {
        return Ok(());
    }
    let verb = if lock.exists() { "ci" } else { "install" };
    sh(Command::new("npm").args([verb, "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(dir))
}

/// The npm packages of the test suites (e2e: playwright-core, axe-core,
/// jsqr, qrcode-generator; the type check: typescript), the example app,
/// the benchmarks and the package build, for `cargo xtask setup`. Each test
/// layer also installs its own before it runs, from the lock file
/// (`ensure_npm`).
pub fn ensure_npm_packages() -> Result {
    for dir in ["tests/e2e", "tests/types", "examples/vite", "bench", "xtask/minify"] {
        ensure_npm(&root().join(dir))?;
    }
    Ok(())
}

/// Everything the test suite needs.
pub fn ensure_all(browsers: bool) -> Result {
    extend_path();
    ensure_wasm_target()?;
    ensure_rust_src()?;
    ensure_wasm_bindgen_cli()?;
    ensure_wasm_pack()?;
    if browsers {
        ensure_chromium()?;
    }
    ensure_media_tools()?;
    ensure_node()
}

/// ffmpeg and ffprobe (Debian's `ffmpeg`): the server makes a video's
/// poster and its shareable MP4 with them, and the tests make their video
/// fixtures with them. libheif's heif-convert and heif-enc
/// (`libheif-examples`): the server decodes HEIC photos with the first, the
/// tests make their HEIC fixtures with the second.
pub fn ensure_media_tools() -> Result {
    if ["ffmpeg", "ffprobe", "heif-convert", "heif-enc"].iter().all(|tool| find(tool).is_some()) {
        return Ok(());
    }
    apt_install(&["ffmpeg", "libheif-examples"])
}
