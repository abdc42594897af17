//! A file too big to keep in IndexedDB does not survive a reload: its
//! attempt shows `needs_file`, and picking the same file again re-attaches
//! it to the same attempt.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::rc::Rc;

use common::*;
use upload_once::Added;
use upload_once::core::attempt::{Confirmation, Transfer};
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn picking_the_same_file_again_continues_the_same_attempt() {
    let mut setup = Setup::new(1_000_000, "required").await;
    setup.faults.offline.set(true);
    setup.opts.keep_file_max_bytes = 1_000;
    slow_retries(&mut setup.opts);
    let first = setup.open().await;
    first.add(vec![file("big.png", "image/png", 5_000, 42.0)]).await.unwrap();
    wait_for("the first try", 10_000.0, || setup.faults.authorizes.get() >= 1).await;
    let id = only_record(&first).id;
    first.close();

    let online = Rc::new(Faults::default());
    let second = setup.reload(&online).await;
    wait_for("needs_file", 10_000.0, || only_record(&second).transfer == Transfer::NeedsFile).await;
    assert_eq!(online.puts.get(), 0);

    let added = second.add(vec![file("big.png", "image/png", 5_000, 42.0)]).await.unwrap();
    assert!(matches!(added[0], Added::Reattached(same) if same == id), "{:?}", added[0]);
    settle(&second).await;
    let record = only_record(&second);
    assert_eq!(record.id, id);
    assert_eq!(record.confirmation, Confirmation::Confirmed);
    assert_eq!(host_media(&setup.event).await.len(), 1);
    second.close();
}
