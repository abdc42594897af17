//! A large file cut mid-transfer and not kept for a reload waits for the
//! guest to pick it again. A file with the same name, size, time and first
//! part, but other bytes in a middle part the server already holds, is not
//! that file: it is a new upload of its own, and the waiting attempt's
//! stored parts stay as they were. The right file then finishes the waiting
//! attempt with its own bytes: the stored object is the original, part for
//! part (its composite checksum is the original file's).
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::rc::Rc;

use common::*;
use upload_once::Added;
use upload_once::core::attempt::{Confirmation, Transfer};
use wasm_bindgen_test::*;
use web_sys::File;

const MIB: usize = 1 << 20;
/// The reference server's defaults: files over 32 MiB go up in 8 MiB parts.
const PART: usize = 8 * MIB;
/// Twelve parts; over the default cap of files kept for a reload (64 MiB).
const SIZE: usize = 96 * MIB;
const PARTS: u32 = (SIZE / PART) as u32;
const LAST_MODIFIED: f64 = 1_700_000_000_000.0;

/// The test file: `big_file`'s bytes, with other bytes in part `changed`.
fn video(changed: Option<u32>) -> File {
    let bytes = js_sys::Uint8Array::new_with_length(SIZE as u32);
    let block = 64 * 1024;
    for (i, start) in (0..SIZE).step_by(block).enumerate() {
        let value = ((i as u32).wrapping_mul(31).wrapping_add(5 * 97) % 251) as u8;
        bytes.fill(value, start as u32, (start + block).min(SIZE) as u32);
    }
    if let Some(n) = changed {
        let start = (n as usize - 1) * PART;
        bytes.fill(252, start as u32 + 4096, (start + PART) as u32);
    }
    let options = web_sys::FilePropertyBag::new();
    options.set_type("video/mp4");
    options.set_last_modified(LAST_MODIFIED);
    File::new_with_u8_array_sequence_and_options(&js_sys::Array::of1(&bytes), "party.mp4", &options).unwrap()
}

/// The composite checksum of a file's 8 MiB parts, computed here.
async fn composite(file: &File) -> String {
    let mut raw = Vec::new();
    for n in 0..PARTS as u64 {
        let start = n * PART as u64;
        let end = (start + PART as u64).min(SIZE as u64);
        let hex = upload_once::env::sha256_hex(file, start, end).await.unwrap();
        raw.extend((0..64).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()));
    }
    format!("{}-{PARTS}", upload_once::env::sha256_of_bytes(&raw).await.unwrap())
}

#[wasm_bindgen_test]
async fn a_file_with_the_same_first_part_and_another_middle_part_is_a_new_upload_never_spliced_in() {
    let setup = Setup::new(1 << 30, "none").await;
    let original = video(None);
    let (id, mut stored_before) = cut_mid_transfer(&setup, &original).await;
    stored_before.sort_unstable();

    let again = Rc::new(Faults::default());
    let second = setup.reload(&again).await;
    wait_for("needs_file", 20_000.0, || second.record(&id).is_some_and(|r| r.transfer == Transfer::NeedsFile)).await;

    // The same name, size, time and first part; another part the server
    // holds (not the first) differs.
    let middle = stored_before.iter().copied().find(|n| *n > 1).expect("a stored part after the first");
    let impostor = video(Some(middle));
    let statuses_before = again.statuses.get();
    let added = second.add(vec![impostor.clone()]).await.unwrap();
    let Added::NotSameFile { id: other, waiting } = added[0] else {
        panic!("a file that differs in stored part {middle} is a new attempt: {:?}", added[0])
    };
    assert_eq!(waiting, id);
    assert!(again.statuses.get() > statuses_before, "the server was asked which parts it holds first");
    let old = second.record(&id).unwrap();
    assert_eq!(old.transfer, Transfer::NeedsFile, "the old attempt still waits for its own file");
    settle(&second).await;
    assert!(again.parts_stored(id).is_empty(), "not a byte sent to the old attempt");
    assert_eq!(again.parts_stored(other).len() as u32, PARTS, "the other file went up whole, on its own");
    assert_eq!(second.record(&other).unwrap().confirmation, Confirmation::Confirmed);

    // The right file: the old attempt goes on from its stored parts.
    let added = second.add(vec![original.clone()]).await.unwrap();
    assert!(matches!(added[0], Added::Reattached(same) if same == id), "{:?}", added[0]);
    settle(&second).await;
    assert_eq!(second.record(&id).unwrap().confirmation, Confirmation::Confirmed, "{:?}", second.record(&id));
    let sent = again.parts_stored(id);
    assert!(sent.iter().all(|n| !stored_before.contains(n)), "no stored part sent again: {sent:?} / {stored_before:?}");

    let media = host_media(&setup.event).await;
    assert_eq!(media.len(), 2, "two files, each stored once");
    let composite_of = |attempt: uuid::Uuid| {
        media
            .iter()
            .find(|m| m["attempt_id"] == attempt.to_string())
            .and_then(|m| m["composite_sha256"].as_str().map(str::to_owned))
            .expect("a media record with its composite")
    };
    assert_eq!(composite_of(id), composite(&original).await, "the stored object is the original, part for part");
    assert_eq!(composite_of(other), composite(&impostor).await);
    second.close();
}
