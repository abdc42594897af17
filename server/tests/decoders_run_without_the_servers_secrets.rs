//! The media tools (ffmpeg, ffprobe, heif-convert, heif-info) decode what a
//! guest sent, so they run as a hostile decoder must: with none of the
//! server's environment (its S3 secret key, admin token and database URL
//! live there), in their job's scratch directory, under limits on the size
//! of what they write, their CPU time and core dumps beside the address
//! space, and in a network namespace of their own (no way out). Checked by
//! running a shell as the tool, which reports what it was given.

use std::time::Duration;

use upload_once_server::media::tools::{TOOL_ENVIRONMENT, cpu_seconds, run};

const MEMORY: u64 = 1 << 30;
const FILE: u64 = 1 << 29;

async fn report(script: &str, dir: &std::path::Path) -> String {
    let out = run(std::path::Path::new("/bin/sh"), &["-c", script], dir, Duration::from_secs(30), MEMORY, FILE)
        .await
        .unwrap_or_else(|e| panic!("the shell ran: {e:?}"));
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn a_tool_gets_no_secret_its_scratch_directory_and_limits() {
    let scratch = tempfile::tempdir().unwrap();
    // The test process's own environment stands for the server's: cargo
    // gives it CARGO_* variables, as a server has UPLOAD_ONCE_* and AWS_*.
    assert!(std::env::vars().any(|(k, _)| k.starts_with("CARGO")), "the parent has variables to leak");
    let env = report("env", scratch.path()).await;
    let mut names: Vec<&str> = env.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    names.retain(|k| !["PWD", "SHLVL", "_", "OLDPWD"].contains(k)); // the shell's own
    names.sort();
    let mut allowed: Vec<&str> = TOOL_ENVIRONMENT.iter().map(|(k, _)| *k).collect();
    allowed.sort();
    assert_eq!(names, allowed, "only what a tool needs: {env}");

    let here = report("pwd", scratch.path()).await;
    assert_eq!(std::path::Path::new(here.trim()).canonicalize().unwrap(), scratch.path().canonicalize().unwrap());

    // ulimit -f counts 512-byte blocks.
    let limits = report("ulimit -f; ulimit -t; ulimit -c; ulimit -v", scratch.path()).await;
    let limits: Vec<&str> = limits.lines().collect();
    let (file_kib, cpu, core, memory_kib) = (FILE / 512, cpu_seconds(Duration::from_secs(30)), 0, MEMORY / 1024);
    assert_eq!(limits, [file_kib.to_string(), cpu.to_string(), core.to_string(), memory_kib.to_string()]);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_tool_has_no_network() {
    let scratch = tempfile::tempdir().unwrap();
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    let tools = report("readlink /proc/self/ns/net; cat /proc/net/dev", scratch.path()).await;
    let mut lines = tools.lines();
    assert_ne!(lines.next().unwrap(), own.to_string_lossy(), "a network namespace of its own");
    let interfaces: Vec<&str> = lines.skip(2).filter_map(|l| l.split(':').next()).map(str::trim).collect();
    assert_eq!(interfaces, ["lo"], "no interface but loopback: {tools}");
}
