//! The first files of a pick are hashed while their records are written,
//! the next ones just ahead of their sends (issue 34): whichever way, each
//! file is read for its hash once, and each authorize carries the SHA-256
//! of its own file's bytes. The files are hashed in the page's hash worker.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::collections::BTreeMap;

use common::*;
use upload_once::core::attempt::Confirmation;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn seven_photos_each_with_their_own_hash() {
    let setup = Setup::new(10_000_000, "none").await;
    let client = setup.open().await;
    let files: Vec<web_sys::File> = (0..7)
        .map(|i| file(&format!("p{i}.jpg"), "image/jpeg", 60_000 + i * 1_000, 1_700_000_000_000.0 + i as f64))
        .collect();
    let mut expected = BTreeMap::new();
    for f in &files {
        let hex = upload_once::env::sha256_hex(f, 0, f.size() as u64).await.unwrap();
        expected.insert(f.name(), hex);
    }
    let reads_before = upload_once::env::hash_reads();

    client.add(files).await.unwrap();
    settle(&client).await;

    let requests = setup.faults.authorize_requests.borrow().clone();
    assert_eq!(requests.len(), 7, "one authorize per file");
    for r in &requests {
        assert_eq!(r.sha256.as_ref(), expected.get(&r.filename), "{}: the hash of another file", r.filename);
    }
    // Each whole file is hashed in the page's hash worker (in the three
    // engines), read once there.
    let reads = upload_once::env::hash_reads();
    assert_eq!(reads.in_worker - reads_before.in_worker, 7, "each file hashed once, in the worker");
    if reads_before.pooling_in_worker && reads.pooling_in_worker {
        assert_eq!(reads.pooled - reads_before.pooled, 7, "each file read once for its hash");
    }
    assert!(client.records().iter().all(|r| r.confirmation == Confirmation::Confirmed));
    assert_eq!(host_media(&setup.event).await.len(), 7);
    client.close();
}
