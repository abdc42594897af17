//! A signed URL that expired before the PUT (the test server signs URLs for
//! 2 s) is refused by storage with `url_expired`; the uploader renews it and
//! carries on with the same attempt.
#![cfg(target_arch = "wasm32")]

use crate::common;

use common::*;
use upload_once::core::attempt::Confirmation;
use upload_once::core::retry::Failure;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn an_expired_url_is_renewed_and_the_upload_completes() {
    let setup = Setup::new(1_000_000, "required").await;
    setup.faults.delay_puts.set(1);
    setup.faults.delay_ms.set(3_500.0);
    let client = setup.open().await;
    client.add(vec![file("late.png", "image/png", 1_000, 9.0)]).await.unwrap();
    settle(&client).await;

    let results = setup.faults.put_results.borrow().clone();
    // The reference store names the refusal `url_expired`; an S3-compatible
    // bucket answers a bare 403 (an XML AccessDenied body).
    assert!(
        matches!(&results[0], Err(Failure::Http { status: 403, code: Some(c), .. }) if c == "url_expired")
            || matches!(&results[0], Err(Failure::Http { status: 403, code: None, .. })),
        "the first PUT was refused as expired: {:?}",
        results[0]
    );
    assert_eq!(results.len(), 2);
    assert!(results[1].is_ok());
    assert_eq!(setup.faults.renews.get(), 1, "one renew");
    assert_eq!(setup.faults.authorizes.get(), 1, "no new attempt");
    assert_eq!(only_record(&client).confirmation, Confirmation::Confirmed);
    assert_eq!(host_media(&setup.event).await.len(), 1);
    client.close();
}
