//! A server started without `--admin-token` makes one, and never prints
//! it (a terminal's scrollback, a CI log and a process supervisor's journal
//! all keep what is printed): it goes to `<data-dir>/admin-token`, readable
//! by its owner alone, and the server prints where.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_generated_admin_token_goes_to_a_file_only_its_owner_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_upload-once-server"));
    // The embedded defaults, whatever backend the test layer runs.
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("UPLOAD_ONCE_")) {
        command.env_remove(name);
    }
    let mut child = command
        .args(["--listen", "127.0.0.1:0", "--www-dir", "none"])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut printed = String::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let Some(Ok(line)) = lines.next() else { break };
        printed.push_str(&line);
        printed.push('\n');
        if line.contains("listening on") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(printed.contains("listening on"), "the server started: {printed}");

    let path = dir.path().join("admin-token");
    let token = std::fs::read_to_string(&path).expect("the token's file").trim().to_owned();
    assert!(token.len() >= 32, "a real token: {token:?}");
    assert!(!printed.contains(&token), "the token was printed: {printed}");
    assert!(printed.contains(&path.display().to_string()), "the server says where it is: {printed}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "readable by its owner alone");
    }
}
