//! Two pages of one browser opening at the same time, before either has a
//! guest session, must end up speaking as one guest: otherwise, after a
//! reload, the attempts one of them authorized would be unknown to the
//! session the other one stored.
#![cfg(target_arch = "wasm32")]

use crate::common;

use std::rc::Rc;

use common::*;
use upload_once::core::attempt::{Confirmation, Transfer};
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn attempts_authorized_by_two_tabs_are_all_found_after_a_reload() {
    let mut setup = Setup::new(1_000_000, "none").await;
    setup.faults.fail_puts.set(true);
    slow_retries(&mut setup.opts);
    // Both open (and join) at once.
    let (a, b) = futures_join(setup.open(), setup.open()).await;
    a.add(vec![file("from-a.png", "image/png", 3_000, 1.0)]).await.unwrap();
    b.add(vec![file("from-b.png", "image/png", 3_000, 2.0)]).await.unwrap();
    wait_for("both attempts to be authorized", 10_000.0, || {
        setup.faults.authorizes.get() >= 2
            && a.records().iter().chain(b.records().iter()).filter(|r| r.object_key.is_some()).count() >= 2
    })
    .await;
    a.close();
    b.close();

    // A reload: one page restores both. The server must know both attempts
    // in the session this page speaks as.
    let fine = Rc::new(Faults::default());
    let c = setup.reload(&fine).await;
    if blobs_can_be_kept().await {
        wait_for("both to be confirmed", 15_000.0, || {
            let r = c.records();
            r.len() == 2 && r.iter().all(|x| x.confirmation == Confirmation::Confirmed)
        })
        .await;
        assert_eq!(host_media(&setup.event).await.len(), 2);
    } else {
        // Safari private browsing keeps no files: both wait for the guest —
        // which means the server answered "authorized" for both, not
        // "unknown to this session".
        wait_for("both to ask for their file", 15_000.0, || {
            let r = c.records();
            r.len() == 2 && r.iter().all(|x| x.transfer == Transfer::NeedsFile)
        })
        .await;
    }
    assert!(c.records().iter().all(|r| r.error.as_ref().is_none_or(|e| e.code != "not_found")));
    assert_eq!(fine.authorizes.get(), 0, "no attempt had to be authorized again");
    c.close();
}

/// Runs two futures to completion together.
async fn futures_join<A: std::future::Future, B: std::future::Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (Box::pin(a), Box::pin(b));
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none() {
            if let std::task::Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let std::task::Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        if ra.is_some() && rb.is_some() { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
    (ra.unwrap(), rb.unwrap())
}
