//! Starts the reference server as a child process for a test layer, and
//! stops it when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::setup::{Result, root, sh};

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// `port` if it is free, else any free port.
pub fn port_or_free(port: u16) -> u16 {
    if TcpListener::bind(("127.0.0.1", port)).is_ok() { port } else { free_port() }
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
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
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
        let port = free_port();
        let data_dir = target_dir().join("test-data").join(format!("{name}-{port}"));
        let _ = std::fs::remove_dir_all(&data_dir);
        std::fs::create_dir_all(&data_dir).map_err(|e| e.to_string())?;
        let admin = format!("xtask-admin-{port}");
        let log = std::fs::File::create(data_dir.join("server.log")).map_err(|e| e.to_string())?;
        let child = Command::new(binary)
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
        let mut server = Server { child, base: format!("http://127.0.0.1:{port}"), admin, data_dir };
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
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
