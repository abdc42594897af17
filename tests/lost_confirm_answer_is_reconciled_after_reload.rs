//! The ambiguous moment: the confirm committed on the server but its answer
//! was lost, and the page went away. After a "reload" (a new uploader over
//! the same IndexedDB), restore asks the server and confirms without
//! sending the bytes again.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use upload_once::core::attempt::{Confirmation, Transfer};
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn restore_confirms_without_uploading_again() {
    let mut setup = Setup::new(1_000_000, "required").await;
    setup.faults.drop_confirm_answers.set(1);
    // Keep the first page from retrying on its own before it "reloads".
    slow_retries(&mut setup.opts);
    let first = setup.open().await;
    first.add(vec![file("vows.png", "image/png", 4_096, 5.0)]).await.unwrap();
    wait_for("the confirm answer to be lost", 10_000.0, || setup.faults.drop_confirm_answers.get() == 0).await;
    wait_for("the loss to be recorded", 10_000.0, || only_record(&first).retries == 1).await;
    let before = only_record(&first);
    assert_eq!(before.confirmation, Confirmation::Unconfirmed, "the page does not know it was confirmed");
    assert_eq!(host_media(&setup.event).await.len(), 1, "but the server does");
    first.close();
    drop(first);

    let reloaded = setup.reload(&setup.faults).await;
    settle(&reloaded).await;
    let after = only_record(&reloaded);
    assert_eq!(after.id, before.id, "the same attempt id carries on");
    assert_eq!(after.confirmation, Confirmation::Confirmed);
    assert_eq!(after.transfer, Transfer::Uploaded);
    assert_eq!(setup.faults.puts.get(), 1, "the bytes were sent once");
    assert_eq!(setup.faults.confirms.get(), 1, "restore needed no second confirm: the server said it was confirmed");
    assert_eq!(host_media(&setup.event).await.len(), 1, "exactly one media record");
    reloaded.close();
}
