//! moto's S3 server (PyPI `moto[server]`), an S3 implementation this
//! project did not write, as a second store for the server tests:
//! installed into a virtualenv under `target/tools/moto-venv`, started on a
//! loopback port, stopped when dropped. [`moto_test_args`] and
//! [`moto_test_env`] run the part of the server suite it can check
//! (`UPLOAD_ONCE_TEST_S3_FLAVOUR=moto`).
//!
//! What moto 5.1.22 does not check, so the tests of it run against
//! testing/s3-server only (each skips on moto and prints why:
//! `StoreCheck` in server/tests/support/mod.rs):
//!
//! - SigV4 signatures: any key, any query, any signed header (another
//!   `Content-Type` or `Content-Length`) is taken;
//! - the expiry of presigned URLs;
//! - `x-amz-checksum-sha256` on a PUT: neither verified nor kept (moto keeps
//!   one only when the SDK's own `x-amz-sdk-checksum-algorithm` comes with
//!   it, and even then does not verify it), so confirm compares size and
//!   type only, and deduplication finds no single PUT (the tests of both
//!   skip on moto);
//! - `x-amz-checksum-sha256` on `UploadPart`: neither verified nor listed by
//!   `ListParts` (the server then makes the composite from the digests the
//!   part URLs were signed with);
//! - the bucket's CORS rule: moto grants any origin, method and header;
//! - `Content-Length` on a PUT: moto takes a PUT without one.
//!
//! moto's bugs that AWS does not have (nothing in the server works around
//! them; the steps that meet them skip on moto):
//!
//! - a part sent to an upload that is completed or aborted is answered
//!   `500` (a KeyError), not `404 NoSuchUpload`;
//! - the checksum of an object assembled from parts is answered without
//!   its `-<part count>`, so it reads as the whole object's SHA-256;
//! - `ListParts` takes `part-number-marker` as a count of parts, not a part
//!   number: with gaps in the part numbers, a page skips parts. The
//!   server asks for pages of 1000, so only an upload of more than 1000
//!   parts with gaps would meet it (the paging test's parts 1–3 have none);
//! - 5.2.0 to 5.2.5 (the newest release) answer `ListParts` with a
//!   `ListPartsResponse` root instead of AWS's `ListPartsResult`, so every
//!   multipart confirm fails there; hence the pin to 5.1.22, the last
//!   release with AWS's root (5.2.x fixed the composite's suffix).
//!
//! Where the two stores disagreed and testing/s3-server was the wrong one:
//! S3 wants a `Content-Length` on every PUT (`411 MissingContentLength`);
//! testing/s3-server took a PUT without one, and the tests' CreateBucket
//! sent none. moto 5.2.5 refused it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::server::{Bound, target_dir, until_listening};
use crate::setup::{Result, apt_install, describe, find, sh};

/// The moto release installed (pinned: another release checks more or
/// less, and has other bugs; see above why not the newest).
pub const MOTO_VERSION: &str = "5.1.22";

/// The virtualenv moto is installed into.
fn venv() -> PathBuf {
    target_dir().join("tools/moto-venv")
}

/// The version of moto installed in the virtualenv, if any (and if its
/// Python still runs).
fn installed_version() -> Option<String> {
    let python = venv().join("bin/python");
    let out = Command::new(&python)
        .args(["-c", "import importlib.metadata as m; print(m.version('moto'))"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether `python` can make a virtualenv with pip in it (Debian ships
/// `venv` and `ensurepip` apart from Python, in `python3-venv`).
fn makes_venvs(python: &PathBuf) -> bool {
    Command::new(python)
        .args(["-c", "import venv, ensurepip"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Python 3 that can make a virtualenv: the first `python3` on PATH,
/// else Debian's, installed (with `python3-venv`) when missing.
fn python() -> Result<PathBuf> {
    if let Some(python) = find("python3").filter(makes_venvs) {
        return Ok(python);
    }
    let debian = PathBuf::from("/usr/bin/python3");
    if !makes_venvs(&debian) {
        apt_install(&["python3", "python3-venv"])?;
    }
    if makes_venvs(&debian) {
        Ok(debian)
    } else {
        Err("python3 cannot make a virtualenv (`import venv, ensurepip` fails) even with python3-venv installed".into())
    }
}

/// moto's server at [`MOTO_VERSION`] in `target/tools/moto-venv` (made, or
/// remade, when it is missing or holds another version); the path of its
/// `moto_server`.
pub fn ensure_moto() -> Result<PathBuf> {
    let server = venv().join("bin/moto_server");
    if server.is_file() && installed_version().as_deref() == Some(MOTO_VERSION) {
        return Ok(server);
    }
    eprintln!("installing moto[server]=={MOTO_VERSION} into {} (half a minute, once)", venv().display());
    // `--clear`: a virtualenv of another version, or whose Python is gone,
    // is made anew.
    sh(Command::new(python()?).args(["-m", "venv", "--clear"]).arg(venv()))?;
    sh(Command::new(venv().join("bin/pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        &format!("moto[server]=={MOTO_VERSION}"),
    ]))?;
    match installed_version() {
        Some(v) if v == MOTO_VERSION && server.is_file() => Ok(server),
        found => Err(format!(
            "pip installed moto {} into {}, not {MOTO_VERSION} with a moto_server",
            found.unwrap_or_else(|| "(none)".into()),
            venv().display()
        )),
    }
}

/// moto's server on a loopback port (its state in memory, gone when it
/// stops).
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// Its log (stdout and stderr).
    pub log: PathBuf,
}

impl Moto {
    /// Installs moto if needed, and starts its server on a port of its
    /// choosing (it prints it).
    pub fn start(name: &str) -> Result<Moto> {
        let binary = ensure_moto()?;
        let dir = target_dir().join("test-moto");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let log_path = dir.join(format!("{name}-{}-{nanos}.log", std::process::id()));
        let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut cmd = Command::new(&binary);
        cmd.args(["--host", "127.0.0.1", "--port", "0"])
            .env("PYTHONUNBUFFERED", "1")
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        eprintln!("+ {}", describe(&cmd));
        let mut child = cmd.spawn().map_err(|e| format!("could not start {}: {e}", binary.display()))?;
        // ` * Running on http://127.0.0.1:<port>` (werkzeug).
        let said = |line: &str| {
            let url = line.split_once("Running on ")?.1;
            let url: String = url.chars().take_while(|c| !c.is_whitespace() && !c.is_control()).collect();
            url.starts_with("http://127.0.0.1:").then_some(url)
        };
        let endpoint = match until_listening(&mut child, "moto's server", &log_path, Duration::from_secs(60), said)? {
            Bound::Listening(endpoint) => endpoint,
            Bound::PortTaken => unreachable!("port 0 is never taken"),
        };
        eprintln!("moto {MOTO_VERSION} at {endpoint} (log: {})", log_path.display());
        Ok(Moto { child, endpoint, log: log_path })
    }

    /// The environment a client of this store needs: moto takes any keys
    /// (it verifies no signature).
    pub fn credentials_env(&self) -> [(&'static str, String); 2] {
        [("AWS_ACCESS_KEY_ID", "moto-test".into()), ("AWS_SECRET_ACCESS_KEY", "moto-test-secret".into())]
    }

    /// Creates a bucket whose CORS rule lets browsers from `origins` PUT,
    /// GET and HEAD with the headers docs/deploy.md lists (the rule it asks
    /// for on a real bucket), and read the `ETag`: an unsigned `CreateBucket`
    /// and `PutBucketCors` (moto verifies no signature).
    pub fn create_bucket(&self, name: &str, origins: &[String]) -> Result {
        self.request("PUT", &format!("/{name}"), "")?;
        if origins.is_empty() {
            return Ok(());
        }
        let origins: String = origins.iter().map(|o| format!("<AllowedOrigin>{o}</AllowedOrigin>")).collect();
        let cors = format!(
            "<CORSConfiguration><CORSRule>{origins}\
             <AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod><AllowedMethod>HEAD</AllowedMethod>\
             <AllowedHeader>content-type</AllowedHeader><AllowedHeader>if-none-match</AllowedHeader>\
             <AllowedHeader>x-amz-checksum-sha256</AllowedHeader>\
             <ExposeHeader>ETag</ExposeHeader><ExposeHeader>Retry-After</ExposeHeader>\
             <ExposeHeader>x-amz-checksum-sha256</ExposeHeader>\
             <MaxAgeSeconds>600</MaxAgeSeconds></CORSRule></CORSConfiguration>"
        );
        self.request("PUT", &format!("/{name}?cors"), &cors)
    }

    /// One unsigned request; an error unless it answers 2xx.
    fn request(&self, method: &str, path: &str, body: &str) -> Result {
        let address = self.endpoint.trim_start_matches("http://");
        let what = format!("{method} {}{path}", self.endpoint);
        let mut stream = TcpStream::connect(address).map_err(|e| format!("{what}: {e}"))?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).map_err(|e| format!("{what}: {e}"))?;
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response.split_whitespace().nth(1).unwrap_or_default();
        if status.starts_with('2') { Ok(()) } else { Err(format!("{what}: {response}")) }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server tests the cluster layer runs against moto (`cargo test`
/// filters: every test whose name contains one): those that reach the
/// bucket. The S3 contract (signed single PUTs, write-once, confirm's
/// checks, the sweeper's deletes, readiness), multipart uploads (parts,
/// `ListParts` page by page, complete, abort, splices), checksums
/// (composites, the store's and the signed ones), range reads (whole
/// objects and objects in parts), the host's ZIP (a second test binary,
/// 256 MB through the bucket) and renditions. About 20 s on two cores with
/// SQLite. The checks moto does not make skip and print why
/// (`--nocapture`).
pub const MOTO_TESTS: &[&str] = &[
    // The S3 contract.
    "signed_urls_are_bound::",
    "authorize_is_create_or_return::",
    "confirm_rejects_mismatches::",
    "confirm_is_idempotent::",
    "status_reports_every_state::",
    "sweeper_never_orphans_media::",
    "a_guest_withdraws_an_upload::",
    "deleting_an_event_removes_its_rows_and_objects::",
    "readiness_follows_the_object_store::",
    "same_bytes_are_stored_once_per_scope::bytes_sent_without_their_sha256",
    // Multipart uploads, ListParts paging, composite checksums.
    "large_files_go_up_in_parts::",
    "multipart_confirm_is_create_or_return::",
    "multipart_uploads_leave_no_parts_behind::",
    "bad_parts_are_refused_and_store_nothing::",
    "a_spliced_file_is_never_confirmed::",
    "a_different_photo_is_never_merged::",
    "a_multipart_duplicate_leaves_no_second_object::",
    "the_composite_checksum_is_never_guessed::",
    "part_urls_expire::",
    // Range reads.
    "media_urls_answer_range_requests::",
    "an_object_in_parts_reads_like_one::",
    // The ZIP.
    "the_host_downloads_the_originals_as_one_zip::",
    "a_two_gigabyte_event_downloads_with_flat_memory_as_a_valid_zip",
    // Renditions and media links.
    "photos_are_shown_upright_and_without_metadata::",
    "rendition_jobs_survive_a_restart::",
    "undecodable_files_get_a_placeholder_and_a_reason::",
    "rejected_objects_are_deleted_after_retention::",
    "media_is_served_safely::",
    "media_links_expire_and_survive_a_key_rotation::",
];

/// The arguments of `cargo` that run [`MOTO_TESTS`] (with the environment
/// of [`moto_test_env`], from the workspace root).
pub fn moto_test_args() -> Vec<String> {
    let mut args: Vec<String> = [
        "test",
        "--no-fail-fast",
        "-p",
        "upload-once-server",
        "--features",
        "upload-once-server/test-hooks",
        "--test",
        "behaviours",
        "--test",
        "a_large_zip_streams_in_flat_memory",
        "--",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    args.extend(MOTO_TESTS.iter().map(|t| (*t).to_owned()));
    // The skips' reasons are printed by passing tests.
    args.push("--nocapture".to_owned());
    args
}

/// The environment of [`moto_test_args`]: S3 storage on `moto` (each test
/// server makes a bucket of its own), and PostgreSQL through
/// `pg_admin_url` when given, else SQLite. The caller removes
/// `UPLOAD_ONCE_TEST_DATABASE_URL` from the environment.
pub fn moto_test_env(pg_admin_url: Option<&str>, moto: &Moto) -> Vec<(&'static str, String)> {
    let database = if pg_admin_url.is_some() { "postgres" } else { "sqlite" };
    let mut env = vec![
        ("UPLOAD_ONCE_TEST_STORAGE", "s3".to_owned()),
        ("UPLOAD_ONCE_TEST_S3_ENDPOINT", moto.endpoint.clone()),
        ("UPLOAD_ONCE_TEST_S3_FLAVOUR", "moto".to_owned()),
        ("UPLOAD_ONCE_TEST_COMBINATION", format!("{database}+moto")),
        // Most of a server test's time is spent waiting on its stores.
        ("RUST_TEST_THREADS", "4".to_owned()),
    ];
    env.extend(moto.credentials_env());
    if let Some(url) = pg_admin_url {
        env.push(("UPLOAD_ONCE_TEST_PG_ADMIN_URL", url.to_owned()));
        env.push(("UPLOAD_ONCE_TEST_REQUIRE_BACKENDS", "1".to_owned()));
    }
    env
}
