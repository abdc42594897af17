//! What the server keeps on its own disk (the data directory, the signing
//! key, the database, the originals and their metadata, the parts of a
//! large file) is its user's alone from the moment each exists: folders
//! 0700 and files 0600, made with that mode (never written, then
//! chmodded), whatever the umask (Debian's 022 would make every original
//! world-readable).

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use support::{Options, TestServer};

/// Every folder and file under `dir` that another user could read.
fn readable_by_others(dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            found.push(format!("{} {mode:o}", entry.path().display()));
        }
        if meta.is_dir() {
            readable_by_others(&entry.path(), found);
        }
    }
}

#[tokio::test]
async fn folders_and_files_are_made_for_the_servers_user_alone() {
    if support::is_s3() || support::is_postgres() {
        // The embedded defaults are what keep data on this disk.
        return;
    }
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("srv").join("upload-once");
    let data_dir = data.clone();
    let server = TestServer::start_with(Options {
        configure: Some(Box::new(move |c| c.data_dir = data_dir)),
        ..support::multipart::options()
    })
    .await;
    let guest = server.guest().await;
    guest.upload(b"a photo's bytes".to_vec()).await;
    let big = server.big_guest().await;
    let (id, bytes, _, plan) = big.authorize_file(66).await;
    big.send_parts(id, &bytes, &plan, &[1]).await;

    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the data directory");
    assert!(data.join("signing.key").exists() && data.join("objects").exists());
    let mut found = Vec::new();
    readable_by_others(&data, &mut found);
    assert!(found.is_empty(), "readable by other users: {found:#?}");
}
