//! The demo and the test layers.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::backends::{Combination, Postgres, S3Server, build_s3_server, test_env};
use crate::engines::{WasmRun, ensure_engines, versions, wasm_runs};
use crate::moto::{Moto, moto_test_args, moto_test_env};
use crate::server::{Server, build_server, reserve_page_port, target_dir};
use crate::setup::{Result, ensure_all, ensure_chromium, ensure_nginx, ensure_npm, extend_path, root, sh};

/// Every test layer, in the order `cargo xtask test` runs them.
pub const LAYERS: &[&str] = &["core", "server", "browser", "e2e", "faults", "cluster", "size", "bench"];

/// The package budget: `.wasm` + JS glue, gzip -9. The build fails past it.
/// The size measured with multipart transfer, pause and resume, attempts
/// that outlive their session, content hashing in the client, and the
/// check of a file picked again against every stored part (159,417 to
/// 159,533 bytes in the builds of 2026-12-02, docs/package-size.md), then
/// the reorderings of issue 34 (161,335 to 161,960 bytes on 2026-12-03),
/// then `busy`/`onBusyChange` and the pick caps of issue 33 (163,653 →
/// 164,900 bytes the same day), then uploads that outlive the tab
/// (Background Fetch, issue 33: 166,063 → 170,255 bytes on 2026-12-04),
/// plus 2 KiB.
pub const PACKAGE_BUDGET_BYTES: u64 = 170_255 + 2 * 1024;

/// The server's test-only hooks (`--test-hooks`): built for the server tests
/// and the fault suite only; the e2e layer builds without them, and checks
/// the flag and the route are not there.
const TEST_HOOKS: &str = "upload-once-server/test-hooks";

/// Builds the npm package into `out` for a wasm-pack target.
pub fn build_package(target: &str, out: &str) -> Result {
    sh(Command::new("wasm-pack")
        .args(["build", "--target", target, "--release", "--out-dir", out, "--no-pack"])
        // `std` rebuilt with the package's own flags, so that a panic is a
        // bare trap: the package installs no panic hook, so the messages,
        // locations and formatting code a stock `std` carries would never
        // be shown (about 12 KiB gzipped). Both flags are unstable, hence
        // RUSTC_BOOTSTRAP on the pinned stable toolchain (docs/package-size.md).
        .args([".", "--", "-Z", "build-std=std,panic_abort"])
        // and with std's own size-over-speed choices (simpler sorts and
        // integer formatting; the client sorts at most a few thousand records).
        .args(["-Z", "build-std-features=optimize_for_size"])
        .current_dir(root())
        .env("RUSTC_BOOTSTRAP", "1")
        // Without the reference-types feature (in `std` too, rebuilt here)
        // wasm-bindgen keeps JS values in a JS-side heap instead of an
        // externref table: 0.6 KiB smaller (docs/package-size.md). A plain
        // `wasm-pack build` keeps rustc's default (reference types on), which
        // the wasm-opt installed by `cargo xtask setup` handles:
        // tests/e2e/plain_wasm_pack_build.test.mjs.
        .env(
            "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS",
            "-C target-feature=-reference-types -Z unstable-options -C panic=immediate-abort",
        ))?;
    if target == "web" {
        minify_glue(&root().join(out))?;
        // Brotli and gzip copies beside the package and the pages, which the
        // reference server sends as they are (docs/benchmarks.md, first load).
        precompress(&[&root().join(out), &root().join("www")])?;
    }
    // Real package metadata beside the generated code.
    crate::run::write_package_json(&root().join(out))
}

/// Bundles and minifies the `--target web` package's JS (wasm-bindgen's
/// `upload_once.js` and the `snippets/` it imports) into one
/// `upload_once.js` with a source map, as the peers in docs/benchmarks.md
/// are measured (esbuild `--bundle --minify`). The `.wasm` is still found
/// beside it through `new URL("upload_once_bg.wasm", import.meta.url)`, and
/// the exports (and so `upload_once.d.ts`) are unchanged.
fn minify_glue(pkg: &Path) -> Result {
    let tools = root().join("xtask/minify");
    ensure_npm(&tools)?;
    let js = pkg.join("upload_once.js");
    sh(Command::new(tools.join("node_modules/.bin/esbuild"))
        .arg(&js)
        .args(["--bundle", "--minify", "--format=esm", "--sourcemap", "--allow-overwrite", "--log-level=warning"])
        .arg(format!("--outfile={}", js.display())))?;
    let snippets = pkg.join("snippets");
    if snippets.exists() {
        std::fs::remove_dir_all(&snippets).map_err(|e| format!("{}: {e}", snippets.display()))?;
    }
    Ok(())
}

/// Writes `.br` and `.gz` copies beside the files of `dirs` (only where a
/// copy is missing or older than its file).
pub fn precompress(dirs: &[&Path]) -> Result {
    let tools = root().join("xtask/minify");
    ensure_npm(&tools)?;
    sh(Command::new("node").arg(tools.join("precompress.mjs")).args(dirs))
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
  "files": ["upload_once_bg.wasm", "upload_once.js", "upload_once.js.map", "upload_once_bg.js", "upload_once.d.ts", "upload_once_bg.wasm.d.ts", "snippets/"],
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

/// The core's tests, then the package's hand-written TypeScript against
/// the declarations those tests derive from the Rust types.
fn layer_core() -> Result {
    // Never a stale copy: the tests write it anew (core/src/typescript.rs).
    let generated = target_dir().join("typescript/upload-once-core.d.ts");
    let _ = std::fs::remove_file(&generated);
    sh(Command::new("cargo").args(["test", "-p", "upload-once-core"]).current_dir(root()))?;
    check_typescript(&generated)
}

/// `tsc --strict` on tests/types/uploader_matches_rust.ts, which holds
/// src/uploader.d.ts against `generated`, type by type: a field added to a
/// Rust type that crosses to JS without its TypeScript fails here.
fn check_typescript(generated: &Path) -> Result {
    let dir = root().join("tests/types");
    every_type_is_compared(&root().join("src/uploader.d.ts"), generated, &dir.join("uploader_matches_rust.ts"))?;
    ensure_npm(&dir)?;
    sh(Command::new("node")
        .arg(dir.join("node_modules/typescript/bin/tsc"))
        .args(["--noEmit", "--strict", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler"])
        .arg("uploader_matches_rust.ts")
        .arg(generated)
        .current_dir(&dir))
}

/// The names a declaration file exports (`export type X`, `export interface X`).
fn exported_types(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("export ")?;
            let rest = rest.strip_prefix("type ").or_else(|| rest.strip_prefix("interface "))?;
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// That the check names every type: each type the hand-written declarations
/// export as `Hand.<Name>`, and each declaration derived from Rust as
/// `Rust.<Name>`. A type added on either side without its comparison fails
/// here, before tsc (which checks only the pairs the file names).
fn every_type_is_compared(hand_written: &Path, generated: &Path, check: &Path) -> Result {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let check_text = read(check)?;
    let mut missing = Vec::new();
    for (side, file) in [("Hand", hand_written), ("Rust", generated)] {
        for name in exported_types(&read(file)?) {
            let named = check_text.match_indices(&format!("{side}.{name}")).any(|(at, found)| {
                !check_text[at + found.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            });
            if !named {
                missing.push(format!("{side}.{name} ({})", file.display()));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} does not compare these types; add a `Same<…>` line for each:\n  {}",
        check.display(),
        missing.join("\n  ")
    ))
}

/// The whole server suite once per backend combination: {SQLite,
/// PostgreSQL} × {local, S3}, over one throwaway PostgreSQL cluster and one
/// test S3 server (each test makes a database and a bucket of its own).
fn layer_server() -> Result {
    // Build both binaries first, so the first combination's timing is the tests'.
    let s3_binary = build_s3_server()?;
    sh(Command::new("cargo")
        .args(["test", "--no-run", "--quiet", "-p", "upload-once-server", "--features", TEST_HOOKS])
        .current_dir(root()))?;
    let pg = Postgres::start()?;
    // The CORS test's origin.
    let s3 = S3Server::start(&s3_binary, "server-tests", &[], &["http://app.example".into()])?;
    // Every combination runs (and every test binary in it), so one failure
    // does not hide another; the layer fails at the end if any did. Two
    // combinations run at once, longest first: a server test spends most of
    // its time waiting on its server, database or store, so two cores keep
    // up with eight of them (four per combination). Each combination's
    // output is printed whole once it ends, so the two never interleave.
    let queue = std::sync::Mutex::new(vec![
        Combination::ALL[0], // sqlite+local
        Combination::ALL[2], // sqlite+s3
        Combination::ALL[1], // postgres+local
        Combination::ALL[3], // postgres+s3, taken first
    ]);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(combination) = queue.lock().map(|mut q| q.pop()).ok().flatten() {
                    let outcome = run_server_combination(combination, &pg, &s3);
                    results.lock().map(|mut r| r.push((combination.name(), outcome))).ok();
                }
            });
        }
    });
    let mut timings = Vec::new();
    let mut failed = Vec::new();
    for (name, (ok, seconds)) in results.into_inner().unwrap_or_default() {
        timings.push(format!("  {:>15}: {} ({seconds} s)", name, if ok { "ok" } else { "FAILED" }));
        if !ok {
            failed.push(name);
        }
    }
    eprintln!("\nserver tests per backend combination:\n{}", timings.join("\n"));
    if failed.is_empty() { Ok(()) } else { Err(format!("server tests failed with {}", failed.join(", "))) }
}

/// Runs the server tests with one backend combination, its output kept in a
/// file and printed whole at the end; whether they passed, and their time.
fn run_server_combination(combination: Combination, pg: &Postgres, s3: &S3Server) -> (bool, u64) {
    let started = Instant::now();
    let log_path = std::env::temp_dir().join(format!("upload-once-server-tests-{}.log", combination.name()));
    let mut cmd = Command::new("cargo");
    cmd.args(["test", "--no-fail-fast", "-p", "upload-once-server", "--features", TEST_HOOKS])
        .current_dir(root())
        .env("RUST_TEST_THREADS", "4")
        .env_remove("UPLOAD_ONCE_TEST_DATABASE_URL");
    for (k, v) in test_env(combination, pg, s3) {
        cmd.env(k, v);
    }
    let ok = match std::fs::File::create(&log_path).and_then(|log| Ok((log.try_clone()?, log))) {
        Ok((out, err)) => {
            eprintln!("+ [{}] {}", combination.name(), crate::setup::describe(&cmd));
            cmd.stdout(out).stderr(err).status().is_ok_and(|s| s.success())
        }
        Err(e) => {
            eprintln!("could not make {}: {e}", log_path.display());
            false
        }
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    eprintln!("\n--- server tests: {} ---\n{output}", combination.name());
    (ok, started.elapsed().as_secs())
}

/// The wasm browser tests in one engine; echoes their output and returns the
/// `engine-probe:` lines (tests/engine_probes.rs) it printed.
fn run_wasm_tests(run: &WasmRun, server: &Server, page_port: u16) -> Result<Vec<String>> {
    let mut cmd = run.cargo();
    cmd.args([
        "test",
        "--no-fail-fast",
        "--target",
        "wasm32-unknown-unknown",
        "-p",
        "upload-once",
        "--",
        "--nocapture",
    ])
    .current_dir(root())
    .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", "wasm-bindgen-test-runner")
    .env("WASM_BINDGEN_TEST_ADDRESS", format!("127.0.0.1:{page_port}"))
    // The runner's limit is for the whole binary: every browser test is in
    // one (tests/browser.rs), about a minute in WebKit.
    .env("WASM_BINDGEN_TEST_TIMEOUT", "400")
    .env("UPLOAD_ONCE_TEST_API", &server.base)
    .env("UPLOAD_ONCE_TEST_ADMIN", &server.admin)
    .stdout(std::process::Stdio::piped());
    eprintln!("+ [{}] {}", run.name, crate::setup::describe(&cmd));
    let mut child = cmd.spawn().map_err(|e| format!("could not start cargo test: {e}"))?;
    let mut probes = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
            println!("{line}");
            if let Some(probe) = line.trim().strip_prefix("engine-probe: ") {
                probes.push(probe.to_owned());
            }
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.success() { Ok(probes) } else { Err(format!("the browser tests failed in {} ({status})", run.name)) }
}

/// wasm-bindgen-test against a real reference server, in every engine:
/// Chromium, Firefox, WebKit in its stock (private-like) profile and in a
/// persistent one. Then once more in Chromium against a server on
/// PostgreSQL and S3.
fn layer_browser() -> Result {
    let engines = ensure_engines("browser")?;
    let binary = build_server()?;
    // Held until the layer ends: the runner binds it once per test binary.
    let (page_port, _reservation) = reserve_page_port()?;
    let page_origin = format!("http://127.0.0.1:{page_port}");
    let mut timings = Vec::new();
    let mut probes = Vec::new();
    let mut failed = Vec::new();
    // The wasm tests read the server's address at compile time: the
    // PostgreSQL + S3 server below takes this one's port once it stopped,
    // so they are not built again.
    let first_port;
    {
        // Signed URLs live 2 s here, so the expired-URL test does not wait long.
        let server = Server::start(
            &binary,
            "browser",
            &[
                "--allowed-origin".into(),
                page_origin.clone(),
                "--url-ttl".into(),
                "2s".into(),
                "--www-dir".into(),
                "none".into(),
            ],
        )?;
        first_port = server.port();
        // Every engine runs against the same server, so the tests are built once.
        for run in wasm_runs(&engines) {
            eprintln!("\n--- browser tests in {} ---", run.name);
            let started = Instant::now();
            let result = run_wasm_tests(&run, &server, page_port);
            timings.push(format!(
                "  {:>18}: {} ({} s)",
                run.name,
                if result.is_ok() { "ok" } else { "FAILED" },
                started.elapsed().as_secs()
            ));
            match result {
                Ok(lines) => probes.extend(lines),
                Err(e) => failed.push(e),
            }
        }
    }

    eprintln!("\n--- browser tests against PostgreSQL + S3 (chromium) ---");
    let started = Instant::now();
    let result = (|| {
        let s3_binary = build_s3_server()?;
        let pg = Postgres::start()?;
        let s3 = S3Server::start(&s3_binary, "browser", &["browser"], std::slice::from_ref(&page_origin))?;
        // 3 s: an S3 URL is signed in whole seconds from a whole-second date,
        // so it can live up to a second less than its TTL (docs/deploy.md).
        let flags: Vec<String> = [
            "--allowed-origin",
            &page_origin,
            "--url-ttl",
            "3s",
            "--www-dir",
            "none",
            "--database-url",
            &pg.admin_url,
            "--storage",
            "s3",
            "--s3-endpoint",
            &s3.endpoint,
            "--s3-bucket",
            "browser",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let server =
            Server::start_preferring(&binary, "browser-pg-s3", &flags, &s3.credentials_env(), Some(first_port))?;
        // Built again only if the port was taken meanwhile.
        run_wasm_tests(&wasm_runs(&engines)[0], &server, page_port).map(|_| ())
    })();
    timings.push(format!(
        "  {:>18}: {} ({} s)",
        "chromium pg+s3",
        if result.is_ok() { "ok" } else { "FAILED" },
        started.elapsed().as_secs()
    ));
    if let Err(e) = result {
        failed.push(e);
    }
    eprintln!("\nbrowser engines: {}", versions(&engines).join("; "));
    eprintln!("browser tests per engine:\n{}", timings.join("\n"));
    eprintln!("what each engine does (tests/engine_probes.rs):\n  {}", probes.join("\n  "));
    if failed.is_empty() { Ok(()) } else { Err(failed.join("; ")) }
}

/// The real pages and the Vite example in Chromium (playwright-core), and
/// the essential guest flows (reload mid-transfer, offline/online) in
/// Firefox (playwright-core over WebDriver BiDi) and WebKit (plain W3C
/// WebDriver, under Xvfb).
fn layer_e2e() -> Result {
    let engines = ensure_engines("e2e")?;
    let chromium = engines.chromium.0.clone();
    build_package("web", "pkg")?;
    build_package("bundler", "pkg-bundler")?;
    let e2e = root().join("tests/e2e");
    ensure_npm(&e2e)?;
    let example = root().join("examples/vite");
    ensure_npm(&example)?;
    // `npm run build` type-checks against the package's .d.ts (strict), then bundles.
    sh(Command::new("npm").args(["run", "build", "--silent"]).current_dir(&example))?;
    let binary = build_server()?;
    let mut cmd = match engines.e2e_webkit() {
        Some(w) => {
            let mut c = Command::new(&w.xvfb_run);
            c.args(["-a", "-s", "-screen 0 1280x1024x24", "node"]);
            c.env("UPLOAD_ONCE_WEBKITWEBDRIVER", &w.driver);
            c
        }
        None => Command::new("node"),
    };
    if let Some(f) = &engines.firefox {
        cmd.env("UPLOAD_ONCE_FIREFOX", &f.browser);
    }
    eprintln!("e2e engines: {} ({})", engines.names(), versions(&engines).join("; "));
    sh(cmd
        .args(["--test", "--test-concurrency=1", "--test-reporter=spec"])
        .current_dir(&e2e)
        .env("UPLOAD_ONCE_E2E_ENGINES", engines.names())
        .env("UPLOAD_ONCE_SERVER_BIN", binary)
        .env("UPLOAD_ONCE_CHROMIUM", chromium)
        .env("UPLOAD_ONCE_ROOT", root())
        .env("UPLOAD_ONCE_TARGET_DIR", target_dir())
        .env("UPLOAD_ONCE_SCREENSHOTS", target_dir().join("e2e-screenshots")))
}

/// Builds what the fault suite and the soak need; returns the node command
/// with its environment.
fn faults_command() -> Result<Command> {
    let (chromium, _) = ensure_chromium()?;
    build_package("web", "pkg")?;
    ensure_npm(&root().join("tests/e2e"))?;
    sh(Command::new("cargo")
        .args(["build", "--quiet", "-p", "upload-once-server", "-p", "upload-once-fault-proxy"])
        .args(["--features", TEST_HOOKS])
        .current_dir(root()))?;
    let bin = target_dir().join("debug");
    let mut node = Command::new("node");
    node.current_dir(root().join("tests/faults"))
        .env("UPLOAD_ONCE_SERVER_BIN", bin.join("upload-once-server"))
        .env("UPLOAD_ONCE_FAULT_PROXY_BIN", bin.join("upload-once-fault-proxy"))
        .env("UPLOAD_ONCE_CHROMIUM", chromium)
        .env("UPLOAD_ONCE_ROOT", root())
        .env("UPLOAD_ONCE_TARGET_DIR", target_dir());
    Ok(node)
}

/// The ambiguous moments, each broken on purpose through the fault proxy,
/// in headless Chromium (tests/faults/), then a short chaos soak.
fn layer_faults() -> Result {
    sh(faults_command()?.args(["--test", "--test-concurrency=1", "--test-reporter=spec"]))?;
    sh(faults_command()?.args([
        "soak.mjs",
        "--uploads",
        "30",
        // Faults and reloads for three minutes (with two CPU hogs it does
        // not settle earlier), then the quiet network and the checker.
        "--minutes",
        "3",
        "--seed",
        "1",
        "--reload-every",
        "1500",
    ]))
}

/// What the cluster needs (tests/cluster/cluster.mjs), started and built:
/// PostgreSQL, moto, nginx, the server as deployed, the fault proxy, the
/// package and Chromium. Returns the node command (in tests/cluster) with
/// its environment, and the stores, which stop when dropped.
fn cluster_command() -> Result<(Command, Postgres, Moto)> {
    let (chromium, _) = ensure_chromium()?;
    let nginx = ensure_nginx()?;
    build_package("web", "pkg")?;
    ensure_npm(&root().join("tests/e2e"))?;
    // As it is deployed: the `server` profile, without the test hooks.
    sh(Command::new("cargo")
        .args(["build", "--quiet", "--profile", "server", "-p", "upload-once-server"])
        .current_dir(root()))?;
    sh(Command::new("cargo").args(["build", "--quiet", "-p", "upload-once-fault-proxy"]).current_dir(root()))?;
    let pg = Postgres::start()?;
    let moto = Moto::start("cluster")?;
    let mut node = Command::new("node");
    node.current_dir(root().join("tests/cluster"))
        .env("UPLOAD_ONCE_SERVER_BIN", target_dir().join("server/upload-once-server"))
        .env("UPLOAD_ONCE_FAULT_PROXY_BIN", target_dir().join("debug/upload-once-fault-proxy"))
        .env("UPLOAD_ONCE_CLUSTER_PG_ADMIN_URL", &pg.admin_url)
        .env("UPLOAD_ONCE_CLUSTER_S3_ENDPOINT", &moto.endpoint)
        .env("UPLOAD_ONCE_NGINX", nginx)
        .env("UPLOAD_ONCE_CHROMIUM", chromium)
        .env("UPLOAD_ONCE_ROOT", root())
        .env("UPLOAD_ONCE_TARGET_DIR", target_dir());
    Ok((node, pg, moto))
}

/// As it is deployed (docs/deploy.md §3): the server tests that reach the
/// bucket against moto's server (an S3 nobody here wrote; what moto does
/// not check stays with testing/s3-server, xtask/src/moto.rs), then
/// tests/cluster: two instances as deployed on one PostgreSQL and one moto
/// bucket behind nginx, with instance loss during a fault soak, the live
/// wall across instances, limits, and work done once.
fn layer_cluster() -> Result {
    let (mut node, pg, moto) = cluster_command()?;
    eprintln!("\n--- the server tests that reach the bucket, against moto (PostgreSQL) ---");
    let mut tests = Command::new("cargo");
    tests.args(moto_test_args()).current_dir(root()).env_remove("UPLOAD_ONCE_TEST_DATABASE_URL");
    for (k, v) in moto_test_env(Some(&pg.admin_url), &moto) {
        tests.env(k, v);
    }
    sh(&mut tests)?;
    eprintln!("\n--- the cluster: two instances behind nginx ---");
    sh(node.args(["--test", "--test-concurrency=1", "--test-reporter=spec"]))
}

/// `cargo xtask soak [--uploads N] [--minutes M] [--seed S] [--fault-rate P] [--reload-every MS]
/// [--guests G] [--parallel P] [--shared S] [--cluster [--rolling] [--session-ttl MIN]]`
/// (tests/faults/soak.mjs says what each does; docs/reliability.md §3 has the long run's line)
pub fn soak(args: &[String]) -> Result {
    ensure_all(true)?;
    if args.iter().any(|a| a == "--cluster") {
        let (mut node, _pg, _moto) = cluster_command()?;
        return sh(node.arg("../faults/soak.mjs").args(args));
    }
    sh(faults_command()?.arg("soak.mjs").args(args))
}

/// Gzip -9 size of a file (flate via the system `gzip`, as the docs report).
fn gzip_size(path: &Path) -> Result<u64> {
    let out = Command::new("gzip").args(["-9", "-c"]).arg(path).output().map_err(|e| format!("gzip: {e}"))?;
    if !out.status.success() {
        return Err(format!("gzip {} failed", path.display()));
    }
    Ok(out.stdout.len() as u64)
}

/// The package (`pkg/`, web target) must stay within [`PACKAGE_BUDGET_BYTES`].
fn layer_size() -> Result {
    // Always built (incrementally): a package left over from older sources
    // would measure them instead.
    build_package("web", "pkg")?;
    let pkg = root().join("pkg");
    let mut files = vec![pkg.join("upload_once_bg.wasm"), pkg.join("upload_once.js")];
    let snippets = pkg.join("snippets");
    let mut stack = vec![snippets];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "js") {
                files.push(path);
            }
        }
    }
    let mut total = 0;
    for f in &files {
        let size = gzip_size(f)?;
        eprintln!("{:>8} B  {}", size, f.strip_prefix(root()).unwrap_or(f).display());
        total += size;
    }
    eprintln!(
        "package: {total} bytes gzipped ({:.1} KiB), budget {:.1} KiB",
        total as f64 / 1024.0,
        PACKAGE_BUDGET_BYTES as f64 / 1024.0
    );
    if total > PACKAGE_BUDGET_BYTES {
        return Err(format!("the package grew past its budget: {total} > {PACKAGE_BUDGET_BYTES} bytes gzipped"));
    }
    Ok(())
}

/// Builds the server and the load generator, runs the load, then the
/// browser benchmarks; the report goes to `out`.
fn run_bench(quick: bool, out: &Path) -> Result {
    let (chromium, _) = ensure_chromium()?;
    ensure_npm(&root().join("bench"))?;
    build_package("web", "pkg")?;
    // Throughput needs the server as deployed (the `server` profile, shared
    // with the cluster layer); the smoke run reuses the debug build.
    let profile = if quick { "dev" } else { "server" };
    sh(Command::new("cargo")
        .args(["build", "--quiet", "--profile", profile, "-p", "upload-once-server", "-p", "upload-once-loadgen"])
        .current_dir(root()))?;
    let dir = target_dir().join(if quick { "debug" } else { "server" });
    let binary = dir.join("upload-once-server");
    let server_json = target_dir().join(if quick { "bench-server-smoke.json" } else { "bench-server.json" });
    {
        let server = Server::start(&binary, "loadgen", &[])?;
        let (confirms, storm) = if quick { ("256", "100") } else { ("4000", "1000") };
        sh(Command::new(dir.join("upload-once-loadgen"))
            .args(["--base", &server.base, "--admin", &server.admin, "--clients", "64", "--confirms", confirms])
            .args(["--storm-attempts", "10", "--storm-requests", storm])
            .arg("--out")
            .arg(&server_json)
            .stdout(std::process::Stdio::null()))?;
    }
    let mut cmd = Command::new("node");
    cmd.arg("bench/run.mjs")
        .current_dir(root())
        .env("UPLOAD_ONCE_SERVER_BIN", &binary)
        .env("UPLOAD_ONCE_CHROMIUM", &chromium)
        .env("UPLOAD_ONCE_ROOT", root())
        .arg("--server-json")
        .arg(&server_json)
        .arg("--out")
        .arg(out);
    if quick {
        cmd.arg("--quick");
    }
    sh(&mut cmd)?;
    // A phone's uplink (issue 34): upload-once, the bare protocol and Uppy
    // in the same run, its tables in target/bench-uplink.md (quoted in
    // docs/benchmarks.md). The smoke run checks the harness on four small
    // files.
    let mut uplink = Command::new("node");
    uplink
        .arg("bench/phone_uplink.mjs")
        .current_dir(root())
        .env("UPLOAD_ONCE_SERVER_BIN", &binary)
        .env("UPLOAD_ONCE_CHROMIUM", chromium)
        .env("UPLOAD_ONCE_ROOT", root());
    if quick {
        uplink.args(["--quick", "--only-load", "4", "--md"]).arg(target_dir().join("bench-uplink-smoke.md"));
    } else {
        uplink.args(["--slow-rounds", "1"]);
    }
    sh(&mut uplink)
}

/// `cargo xtask bench [--quick]`: the benchmarks, reported in docs/benchmarks.md.
pub fn bench(args: &[String]) -> Result {
    ensure_all(true)?;
    let quick = args.iter().any(|a| a == "--quick");
    let out = if quick { target_dir().join("bench-smoke.md") } else { root().join("docs/benchmarks.md") };
    run_bench(quick, &out)
}

/// `cargo xtask test [layer ...]`
pub fn test(args: &[String]) -> Result {
    extend_path();
    let layers: Vec<&str> = if args.is_empty() { LAYERS.to_vec() } else { args.iter().map(String::as_str).collect() };
    if let Some(unknown) = layers.iter().find(|l| !LAYERS.contains(l)) {
        return Err(format!("unknown test layer `{unknown}` (layers: {})", LAYERS.join(", ")));
    }
    ensure_all(layers.iter().any(|l| matches!(*l, "browser" | "e2e" | "faults" | "cluster" | "bench")))?;
    // The servers' data of the previous run (kept until now for a look after
    // a failure); without this it piles up run after run.
    let _ = std::fs::remove_dir_all(target_dir().join("test-data"));
    let mut report = Vec::new();
    for layer in &layers {
        let started = Instant::now();
        eprintln!("\n=== test layer: {layer} ===");
        let result = match *layer {
            "core" => layer_core(),
            "server" => layer_server(),
            "browser" => layer_browser(),
            "e2e" => layer_e2e(),
            "faults" => layer_faults(),
            "cluster" => layer_cluster(),
            "size" => layer_size(),
            // Tiny sizes, only to keep the benchmarks working.
            "bench" => run_bench(true, &target_dir().join("bench-smoke.md")),
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
