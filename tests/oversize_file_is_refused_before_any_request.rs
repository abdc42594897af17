//! Bad input gets a clear error and loses nothing: a file over the event's
//! (or the app's) limit, or of a type not allowed, is refused in the page,
//! before any request is sent.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use upload_once::Added;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn a_too_large_file_is_refused_with_no_request_and_no_record() {
    let mut setup = Setup::new(10_000, "required").await;
    setup.opts.restrictions.max_file_bytes = Some(50_000);
    let client = setup.open().await;
    let added = client
        .add(vec![
            file("huge.png", "image/png", 20_000, 1.0),
            file("notes.txt", "text/plain", 10, 1.0),
            file("ok.png", "image/png", 100, 1.0),
        ])
        .await
        .unwrap();
    match &added[0] {
        Added::Refused { file_name, error } => {
            assert_eq!(file_name, "huge.png");
            assert_eq!(error.code.as_str(), "file_too_large", "the event's 10 kB limit applies");
            assert!(error.message.contains("10 KB"), "the message names the limit: {}", error.message);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(matches!(&added[1], Added::Refused { error, .. } if error.code.as_str() == "type_not_allowed"));
    assert!(matches!(added[2], Added::New(_)));
    settle(&client).await;
    assert_eq!(client.records().len(), 1, "refused files leave no record");
    assert_eq!(setup.faults.authorizes.get(), 1, "only the accepted file reached the network");
    client.close();
}
