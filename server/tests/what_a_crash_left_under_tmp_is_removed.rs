//! The embedded store receives every upload, part and metadata file under
//! `.tmp` and renames it into place; a crash or a power cut between the two
//! leaves it there. What has not been touched for an hour is removed, at
//! start and by the sweeper; what is being written is left alone.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

use upload_once_server::secrets::Signer;
use upload_once_server::storage::local::{LocalObjectStore, TMP_ABANDONED_AFTER};

use crate::support::TestServer;

/// Sets an entry's modification time `ago` in the past (a file, or a
/// directory through its descriptor).
fn touched_ago(path: &Path, ago: Duration) {
    File::open(path).unwrap().set_modified(SystemTime::now() - ago).unwrap();
}

/// Under `tmp`: an old half-received upload, an old part directory with a
/// file in it (an object in parts moved out to be deleted), and a file being
/// written now. The two old paths.
fn leave_a_crash_behind(tmp: &Path) -> [std::path::PathBuf; 3] {
    let upload = tmp.join("0123abcd");
    std::fs::write(&upload, b"half an upload").unwrap();
    touched_ago(&upload, TMP_ABANDONED_AFTER + Duration::from_secs(60));
    let deleted = tmp.join("deleted-4567");
    std::fs::create_dir(&deleted).unwrap();
    std::fs::write(deleted.join("1"), b"a part").unwrap();
    touched_ago(&deleted, TMP_ABANDONED_AFTER * 3);
    let fresh = tmp.join("89ef.meta");
    std::fs::write(&fresh, b"being written").unwrap();
    touched_ago(&fresh, TMP_ABANDONED_AFTER - Duration::from_secs(60));
    [upload, deleted, fresh]
}

#[tokio::test]
async fn the_sweeper_removes_what_a_crash_left_and_leaves_what_is_being_written() {
    let server = TestServer::start().await;
    if server.state.local_store.as_deref().is_none() {
        return; // S3 keeps no temporary files of ours.
    }
    let tmp = server.state.config.data_dir.join("objects").join(".tmp");
    let [upload, deleted, fresh] = leave_a_crash_behind(&tmp);
    // A photo stored meanwhile, and the store's own work under .tmp.
    let guest = server.guest().await;
    guest.upload(b"a photo".to_vec()).await;
    let stored = server.stored_keys().await;
    assert_eq!(stored.len(), 1);

    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!(report.tmp_entries_removed, 2, "{report:?}");
    assert!(!upload.exists() && !deleted.exists(), "what the crash left is gone");
    assert!(fresh.exists(), "a file written within the hour is left");
    assert_eq!(server.stored_keys().await, stored, "the stored photo is untouched");

    let report = upload_once_server::services::sweeper::sweep_once(&server.state).await.unwrap();
    assert_eq!(report.tmp_entries_removed, 0, "nothing more to remove: {report:?}");
}

#[tokio::test]
async fn a_store_opened_after_a_crash_starts_without_its_leftovers() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path().join(".tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let [upload, deleted, fresh] = leave_a_crash_behind(&tmp);
    LocalObjectStore::open(root.path(), "http://127.0.0.1:1", Signer::new(vec![7; 32])).unwrap();
    assert!(!upload.exists() && !deleted.exists(), "what the crash left is gone");
    assert!(fresh.exists(), "a file written within the hour is left");
}
