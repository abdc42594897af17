//! Where the browser will not keep a picked file in IndexedDB (Safari's
//! private browsing; the stock WebKitWebDriver profile behaves the same:
//! `UnknownError: Error preparing Blob/File data to be stored in object
//! store`), the attempt records are still stored and the upload still
//! completes in the page. After a reload, an attempt that could not finish
//! shows `needs_file`, and picking the file again finishes the same attempt.
//! Where the file was kept, the attempt simply continues.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::rc::Rc;

use common::*;
use upload_once::Added;
use upload_once::core::attempt::{Confirmation, Transfer};
use upload_once::store::IndexedDbStore;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn uploads_complete_in_the_page_and_a_reload_asks_for_a_file_that_was_not_kept() {
    let kept_here = blobs_can_be_kept().await;
    let mut setup = Setup::new(1_000_000, "none").await;
    // The offline attempt below waits in this page instead of retrying.
    slow_retries(&mut setup.opts);
    let page = setup.open().await;

    // In this page the file is held in memory: the upload completes
    // whether or not IndexedDB kept a copy.
    page.add(vec![file("first.png", "image/png", 20_000, 1.0)]).await.unwrap();
    settle(&page).await;
    assert_eq!(only_record(&page).confirmation, Confirmation::Confirmed);
    assert_eq!(setup.faults.puts.get(), 1);

    // The network goes away before the second file is sent; the page then
    // "reloads" with that attempt unfinished.
    setup.faults.offline.set(true);
    let added = page.add(vec![file("second.png", "image/png", 30_000, 2.0)]).await.unwrap();
    let Added::New(second) = added[0] else { panic!("a new attempt: {:?}", added[0]) };
    wait_for("the offline try", 10_000.0, || setup.faults.authorizes.get() >= 2).await;
    // A third file while blob storage has failed (where it does): its record
    // is stored all the same (add returns once it is durable), before
    // anything is sent.
    let added = page.add(vec![file("third.png", "image/png", 10_000, 3.0)]).await.unwrap();
    let Added::New(third) = added[0] else { panic!("a new attempt: {:?}", added[0]) };
    assert_eq!(page.records().len(), 3);
    if kept_here {
        // Wait until both copies are really in IndexedDB (kept in the background).
        let keys = [page.record(&second).unwrap().blob_key, page.record(&third).unwrap().blob_key];
        let store = IndexedDbStore::open(&setup.db).await.map_err(JsValue::from).unwrap();
        let mut waited = 0.0;
        loop {
            let stored = store.blob_keys().await.unwrap_or_default();
            if keys.iter().all(|k| stored.contains(k)) {
                break;
            }
            assert!(waited < 10_000.0, "the files were kept in IndexedDB");
            upload_once::env::sleep(25.0).await;
            waited += 25.0;
        }
        store.close_connection();
    }
    page.close();

    let online = Rc::new(Faults::default());
    let reloaded = setup.reload(&online).await;
    assert_eq!(reloaded.records().len(), 3, "every attempt comes back after the reload");
    if kept_here {
        settle(&reloaded).await;
        assert!(
            reloaded.records().iter().all(|r| r.confirmation == Confirmation::Confirmed),
            "{:?}",
            reloaded.records()
        );
        assert_eq!(online.puts.get(), 2, "the kept files are sent without being picked again");
    } else {
        wait_for("needs_file for both unfinished attempts", 10_000.0, || {
            reloaded.records().iter().filter(|r| r.transfer == Transfer::NeedsFile).count() == 2
        })
        .await;
        settle(&reloaded).await;
        assert_eq!(online.puts.get(), 0, "nothing to send without the files");
        let again = reloaded
            .add(vec![file("second.png", "image/png", 30_000, 2.0), file("third.png", "image/png", 10_000, 3.0)])
            .await
            .unwrap();
        assert!(matches!(again[0], Added::Reattached(id) if id == second), "{:?}", again[0]);
        assert!(matches!(again[1], Added::Reattached(_)), "{:?}", again[1]);
        settle(&reloaded).await;
        assert!(
            reloaded.records().iter().all(|r| r.confirmation == Confirmation::Confirmed),
            "{:?}",
            reloaded.records()
        );
        assert_eq!(online.puts.get(), 2);
    }
    assert_eq!(host_media(&setup.event).await.len(), 3, "each file stored exactly once");
    reloaded.close();
}
