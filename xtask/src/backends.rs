//! The production backends for the test layers: a throwaway PostgreSQL
//! cluster (Debian's `postgresql` package) and the test S3 server
//! (`testing/s3-server`), both on loopback ports, both stopped when dropped
//! (also when a test layer fails).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::server::{Bound, on_free_port, says_port_taken, target_dir, until_listening};
use crate::setup::{Result, apt_install, describe, find, output, root, sh};

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
fn postgres_bin_dir() -> Option<PathBuf> {
    let from_path =
        find("pg_ctl").and_then(|p| std::fs::canonicalize(p).ok()).and_then(|p| p.parent().map(PathBuf::from));
    if let Some(dir) = from_path.filter(|d| d.join("initdb").is_file() && d.join("postgres").is_file()) {
        return Some(dir);
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| d.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    output("id", &["-u"]).as_deref() == Some("0")
}

/// A command run as the `postgres` user when we are root (PostgreSQL
/// refuses to run as root).
fn as_postgres(program: PathBuf) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        // Started from `/`: the checkout may be out of its reach.
        cmd.args(["-u", "postgres", "--"]).arg(program).current_dir("/");
        cmd
    } else {
        Command::new(program)
    }
}

/// A fresh, empty directory `<prefix>-…` under `parent`.
fn fresh_dir(parent: &Path, prefix: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    for n in 0..100 {
        let dir = parent.join(format!("{prefix}-{}-{nanos}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!("could not make a fresh directory under {}", parent.display()))
}

/// A fresh directory for the cluster, owned by the user the cluster runs as
/// and reachable by it: under the system's temporary directory, not under
/// `target/`, which a checkout in a private home (`/root` is mode 700) keeps
/// out of the `postgres` user's reach.
fn cluster_dir() -> Result<PathBuf> {
    let mut parents = vec![std::env::temp_dir()];
    for fallback in ["/tmp", "/var/tmp"] {
        if !parents.iter().any(|p| p == Path::new(fallback)) {
            parents.push(PathBuf::from(fallback));
        }
    }
    let mut refused = Vec::new();
    for parent in parents {
        let Ok(dir) = fresh_dir(&parent, "upload-once-pg") else {
            continue;
        };
        if !is_root() {
            return Ok(dir);
        }
        sh(Command::new("chown").args(["postgres:postgres"]).arg(&dir))?;
        // The postgres user must be able to reach it (every parent searchable).
        let reachable = as_postgres(PathBuf::from("test")).arg("-w").arg(&dir).status().is_ok_and(|s| s.success());
        if reachable {
            return Ok(dir);
        }
        refused.push(parent.display().to_string());
        let _ = std::fs::remove_dir_all(&dir);
    }
    Err(format!("the postgres user cannot reach a fresh directory under any of: {}", refused.join(", ")))
}

/// A throwaway PostgreSQL cluster on a loopback port, its data in a fresh
/// directory under the system's temporary directory (removed when dropped).
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    /// `postgres://postgres@127.0.0.1:<port>/postgres`: may create databases.
    pub admin_url: String,
}

impl Postgres {
    /// Installs PostgreSQL if missing (as root), then `initdb` and
    /// `pg_ctl start` with fsync off.
    pub fn start() -> Result<Postgres> {
        if postgres_bin_dir().is_none() {
            apt_install(&["postgresql"])?;
        }
        let bin =
            postgres_bin_dir().ok_or("PostgreSQL is installed but initdb was not found under /usr/lib/postgresql")?;
        let data = cluster_dir()?;
        // From here on, Drop removes the directory (and stops the cluster) whatever happens.
        let mut pg = Postgres { bin: bin.clone(), data: data.clone(), admin_url: String::new() };
        let mut initdb = as_postgres(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdout(Stdio::null());
        sh(&mut initdb)?;
        // The port is given to postgres, which binds it itself: when another
        // process took it first, postgres says so and the start is tried
        // again on another port. `pg_ctl -w` waits until this very server
        // takes connections.
        let port = on_free_port("PostgreSQL", |port| {
            let options = format!(
                "-h 127.0.0.1 -p {port} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400 -c unix_socket_directories={}",
                data.display()
            );
            let log = data.join(format!("server-{port}.log"));
            let mut start = as_postgres(bin.join("pg_ctl"));
            start.arg("-D").arg(&data).args(["-o", &options, "-l"]).arg(&log).args(["-w", "-t", "60", "start"]);
            start.stdout(Stdio::null());
            match sh(&mut start) {
                Ok(()) => Ok(Bound::Listening(port)),
                Err(e) => {
                    let text = std::fs::read_to_string(&log).unwrap_or_default();
                    if says_port_taken(&text) { Ok(Bound::PortTaken) } else { Err(format!("{e}\n{text}")) }
                }
            }
        })?;
        pg.admin_url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        eprintln!("PostgreSQL test cluster at {} (data in {})", pg.admin_url, data.display());
        Ok(pg)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let mut stop = as_postgres(self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let _ = stop.status();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// Builds the test S3 server (same target dir as the server, so the shared
/// crates are built once).
pub fn build_s3_server() -> Result<PathBuf> {
    sh(Command::new("cargo").args(["build", "--quiet", "-p", "upload-once-s3-server"]).current_dir(root()))?;
    Ok(target_dir().join("debug/upload-once-s3-server"))
}

/// The test S3 server (s3s-fs + CORS) on a loopback port.
pub struct S3Server {
    child: Child,
    /// Its root directory.
    pub root: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: String,
    /// The binary (tests start stores of their own with it).
    pub binary: PathBuf,
}

impl S3Server {
    /// Starts the store with `buckets` created and browsers from `origins`
    /// allowed by CORS.
    pub fn start(binary: &PathBuf, name: &str, buckets: &[&str], origins: &[String]) -> Result<S3Server> {
        let root = fresh_dir(&target_dir().join("test-s3"), name)?;
        let access_key = "upload-once-test".to_owned();
        let secret_key =
            format!("secret-{}", root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        let log_path = root.with_extension("log");
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(binary);
        // It picks its own port and prints it.
        cmd.args(["--listen", "127.0.0.1:0"])
            .arg("--root")
            .arg(&root)
            .env("AWS_ACCESS_KEY_ID", &access_key)
            .env("AWS_SECRET_ACCESS_KEY", &secret_key)
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        if !buckets.is_empty() {
            cmd.args(["--bucket", &buckets.join(",")]);
        }
        if !origins.is_empty() {
            cmd.args(["--allowed-origin", &origins.join(",")]);
        }
        eprintln!("+ {}", describe(&cmd));
        let mut child = cmd.spawn().map_err(|e| format!("could not start {}: {e}", binary.display()))?;
        let said = |line: &str| line.strip_prefix("upload-once-s3-server listening on ").map(str::to_owned);
        let endpoint = match until_listening(&mut child, "the test S3 server", &log_path, Duration::from_secs(30), said)
        {
            Ok(Bound::Listening(endpoint)) => endpoint,
            Ok(Bound::PortTaken) => unreachable!("port 0 is never taken"),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&root);
                return Err(e);
            }
        };
        Ok(S3Server { child, root, endpoint, access_key, secret_key, binary: binary.clone() })
    }

    /// The environment a client of this store needs.
    pub fn credentials_env(&self) -> [(&'static str, String); 2] {
        [("AWS_ACCESS_KEY_ID", self.access_key.clone()), ("AWS_SECRET_ACCESS_KEY", self.secret_key.clone())]
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// One backend combination of the server tests.
#[derive(Clone, Copy, Debug)]
pub struct Combination {
    /// PostgreSQL rather than SQLite.
    pub postgres: bool,
    /// S3 rather than local storage.
    pub s3: bool,
}

impl Combination {
    /// Every combination, the embedded default first.
    pub const ALL: [Combination; 4] = [
        Combination { postgres: false, s3: false },
        Combination { postgres: true, s3: false },
        Combination { postgres: false, s3: true },
        Combination { postgres: true, s3: true },
    ];

    /// `sqlite+local`, `postgres+s3`, …
    pub fn name(&self) -> String {
        format!("{}+{}", if self.postgres { "postgres" } else { "sqlite" }, if self.s3 { "s3" } else { "local" })
    }
}

/// The environment of `cargo test -p upload-once-server` for a combination
/// (see server/tests/support/mod.rs).
pub fn test_env(c: Combination, pg: &Postgres, s3: &S3Server) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("UPLOAD_ONCE_TEST_S3_SERVER_BIN", s3.binary.display().to_string()),
        ("UPLOAD_ONCE_TEST_COMBINATION", c.name()),
    ];
    env.extend(s3.credentials_env());
    if c.postgres {
        env.push(("UPLOAD_ONCE_TEST_PG_ADMIN_URL", pg.admin_url.clone()));
    }
    if c.s3 {
        env.push(("UPLOAD_ONCE_TEST_STORAGE", "s3".into()));
        env.push(("UPLOAD_ONCE_TEST_S3_ENDPOINT", s3.endpoint.clone()));
    }
    if c.postgres && c.s3 {
        // The two-instance test runs here, and must never be skipped.
        env.push(("UPLOAD_ONCE_TEST_REQUIRE_BACKENDS", "1".into()));
    }
    env
}
