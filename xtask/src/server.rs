//! Starts the reference server as a child process for a test layer, and
//! stops it when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::setup::{Result, root, sh};

/// A loopback port nobody listens on right now, for a child process that
/// must be told its port before it starts. Another process can take it
/// before the child listens: such children are started with [`on_free_port`],
/// which notices and tries another port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// What a child said about the port it was told.
pub enum Bound<T> {
    /// It listens there.
    Listening(T),
    /// Another process had the port first (the child said so and ended).
    PortTaken,
}

/// Starts something on a free port with `start`, and on another free port
/// each time it answers [`Bound::PortTaken`].
pub fn on_free_port<T>(what: &str, mut start: impl FnMut(u16) -> Result<Bound<T>>) -> Result<T> {
    const TRIES: u32 = 5;
    for _ in 0..TRIES {
        let port = free_port();
        match start(port)? {
            Bound::Listening(started) => return Ok(started),
            Bound::PortTaken => {
                eprintln!("{what}: port {port} was taken before it could listen; another port")
            }
        }
    }
    Err(format!("{what}: each of {TRIES} free ports was taken before it could listen"))
}

/// Whether a child's output says its port was taken.
pub fn says_port_taken(output: &str) -> bool {
    let output = output.to_ascii_lowercase();
    output.contains("address already in use") || output.contains("os error 98")
}

/// Waits until the log file `log` of `child` has a line `listening` says
/// yes to, and answers what it found in that line; [`Bound::PortTaken`] if
/// the child ended because its port was taken; an error if it ended for
/// another reason or after `limit`.
pub fn until_listening<T>(
    child: &mut Child,
    what: &str,
    log: &Path,
    limit: Duration,
    mut listening: impl FnMut(&str) -> Option<T>,
) -> Result<Bound<T>> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(found) = text.lines().find_map(&mut listening) {
            return Ok(Bound::Listening(found));
        }
        if let Ok(Some(status)) = child.try_wait() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if says_port_taken(&text) {
                return Ok(Bound::PortTaken);
            }
            return Err(format!("{what} exited ({status}) before it listened:\n{text}"));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} did not say it listens within {} s:\n{text}", limit.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port for the wasm-bindgen test runner's page, which every
/// test binary binds in turn (the server must allow its origin before the
/// first one starts, so the runner cannot pick its own). It is taken from
/// 18765–18864, below the range the system hands out for port 0 and
/// outgoing connections (32768 and up on Linux), so only a process asking
/// for that very port can take it; and each port is reserved with a lock
/// file that other `cargo xtask` runs (other checkouts testing at the same
/// time) respect. The reservation lasts as long as the returned file.
pub fn reserve_page_port() -> Result<(u16, std::fs::File)> {
    for port in 18_765..18_865u16 {
        let path = std::env::temp_dir().join(format!("upload-once-page-port-{port}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if file.try_lock().is_err() {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok((port, file));
        }
    }
    Err("no port in 18765-18864 is free for the browser tests' page".into())
}

/// The cargo target directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

/// Builds the server binary (dev profile, shared with the server tests).
pub fn build_server() -> Result<PathBuf> {
    sh(Command::new("cargo").args(["build", "--quiet", "-p", "upload-once-server"]).current_dir(root()))?;
    Ok(target_dir().join("debug/upload-once-server"))
}

/// Answers whether `GET path` on `port` returns 200.
pub fn http_ok(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

/// A running reference server.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The admin token.
    pub admin: String,
    /// Its data directory (database, objects).
    pub data_dir: PathBuf,
}

impl Server {
    /// Starts `binary` on a free port with a fresh data directory and
    /// `extra` flags, and waits until it answers.
    pub fn start(binary: &PathBuf, name: &str, extra: &[String]) -> Result<Server> {
        Self::start_with_env(binary, name, extra, &[])
    }

    /// [`Server::start`] with extra environment variables.
    pub fn start_with_env(binary: &PathBuf, name: &str, extra: &[String], env: &[(&str, String)]) -> Result<Server> {
        Self::start_preferring(binary, name, extra, env, None)
    }

    /// [`Server::start_with_env`] on `port` if it is free (a server stopped
    /// before had it: what was built for its address works unchanged), else
    /// on another free port.
    pub fn start_preferring(
        binary: &PathBuf,
        name: &str,
        extra: &[String],
        env: &[(&str, String)],
        port: Option<u16>,
    ) -> Result<Server> {
        let what = format!("the server ({name})");
        let start = |port: u16| -> Result<Bound<Server>> {
            let data_dir = target_dir().join("test-data").join(format!("{name}-{port}"));
            let _ = std::fs::remove_dir_all(&data_dir);
            std::fs::create_dir_all(&data_dir).map_err(|e| e.to_string())?;
            let admin = format!("xtask-admin-{port}");
            let log_path = data_dir.join("server.log");
            let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
            let mut child = Command::new(binary)
                .args(["--listen", &format!("127.0.0.1:{port}"), "--admin-token", &admin])
                .arg("--data-dir")
                .arg(&data_dir)
                .args(extra)
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                .env("RUST_LOG", "warn")
                .stdout(log.try_clone().map_err(|e| e.to_string())?)
                .stderr(log)
                .spawn()
                .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
            // The server prints the address it bound: this child has the port.
            let said = format!("listening on 127.0.0.1:{port} ");
            match until_listening(&mut child, &what, &log_path, Duration::from_secs(30), |line| {
                line.contains(&said).then_some(())
            })? {
                Bound::Listening(()) => {
                    Ok(Bound::Listening(Server { child, base: format!("http://127.0.0.1:{port}"), admin, data_dir }))
                }
                Bound::PortTaken => {
                    let _ = std::fs::remove_dir_all(&data_dir);
                    Ok(Bound::PortTaken)
                }
            }
        };
        let preferred = match port {
            Some(port) => match start(port)? {
                Bound::Listening(server) => Some(server),
                Bound::PortTaken => {
                    eprintln!("{what}: port {port} is taken; another port");
                    None
                }
            },
            None => None,
        };
        let mut server = match preferred {
            Some(server) => server,
            None => on_free_port(&what, start)?,
        };
        let port = server.port();
        let started = Instant::now();
        while !http_ok(port, "/healthz") {
            if let Ok(Some(status)) = server.child.try_wait() {
                let log = std::fs::read_to_string(server.data_dir.join("server.log")).unwrap_or_default();
                return Err(format!("the server exited ({status}):\n{log}"));
            }
            if started.elapsed() > Duration::from_secs(30) {
                return Err("the server did not answer /healthz within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
