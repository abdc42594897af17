//! A file is kept in IndexedDB for a reload only while the browser's storage
//! estimate leaves room for it (a tenth of the room stays free), and the
//! attempt says why it was not kept. The upload goes on either way.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use upload_once::core::attempt::Confirmation;
use wasm_bindgen_test::*;

/// Makes `navigator.storage.estimate()` report `room` bytes left (giving
/// the page a `navigator.storage` where the engine has none, as WebKitGTK).
fn report_room(room: u64) {
    js_sys::eval(&format!(
        "if (!navigator.storage) Object.defineProperty(navigator, 'storage', {{ configurable: true, value: {{ madeByTest: true }} }}); \
         Object.defineProperty(navigator.storage, 'estimate', {{ configurable: true, value: async () => ({{ quota: {}, usage: 1000 }}) }})",
        room + 1000
    ))
    .expect("the estimate can be replaced");
}

/// Gives the page back the browser's own estimate when dropped, however the
/// test ends: every browser test runs in this one page, and a room left
/// reported would keep the tests after this one from keeping their files.
struct BrowsersOwnRoom;

impl Drop for BrowsersOwnRoom {
    fn drop(&mut self) {
        js_sys::eval(
            "if (navigator.storage && navigator.storage.madeByTest) delete navigator.storage; \
             else if (navigator.storage) delete navigator.storage.estimate",
        )
        .expect("the estimate can be given back");
    }
}

#[wasm_bindgen_test]
async fn a_file_beyond_the_room_left_is_not_kept_says_why_and_still_uploads() {
    let kept_here = blobs_can_be_kept().await;
    let client = Setup::new(1_000_000, "none").await.open().await;

    let _given_back = BrowsersOwnRoom;
    report_room(100_000);
    client.add(vec![file("small.png", "image/png", 20_000, 1.0)]).await.unwrap();
    report_room(30_000);
    client.add(vec![file("large.png", "image/png", 40_000, 2.0)]).await.unwrap();
    let views = client.views();
    let (small, large) = (&views[0], &views[1]);
    if kept_here {
        assert!(small.file_kept && small.not_kept_reason.is_none(), "{small:?}");
    } else {
        // WebKit's private-like profile refuses every file: it says so.
        assert_eq!((small.file_kept, small.not_kept_reason), (false, Some("refused")));
    }
    assert!(!large.file_kept, "40 kB is beyond 90 % of the 30 kB left");
    // The room is weighed before any write is tried, so this is why even
    // where the engine refuses every file.
    assert_eq!(large.not_kept_reason, Some("no_room"));
    settle(&client).await;
    assert!(client.records().iter().all(|r| r.confirmation == Confirmation::Confirmed), "not kept is not lost");
    client.close();
    drop(_given_back);
    let own = js_sys::eval("navigator.storage === undefined || !Object.hasOwn(navigator.storage, 'estimate')");
    assert!(own.unwrap().is_truthy(), "the browser's own estimate is back");
}
