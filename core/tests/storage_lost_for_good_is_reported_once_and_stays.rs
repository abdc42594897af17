//! A database taken by a newer version in another tab is gone for good for
//! this page: the app hears it once, and the error stays until a reload,
//! whatever a write still in flight answers afterwards (the browser test
//! `storage_error_is_reported_and_holds_the_attempt` found a late write's
//! success clearing it).

mod support;

use support::*;
use upload_once_core::error::{Error, ErrorCode};

fn gone() -> Error {
    Error::new(ErrorCode::StorageUnavailable, "another tab opened a newer version of this site: reload this page")
}

#[test]
fn a_late_successful_write_does_not_clear_the_loss() {
    let mut sim = Sim::first_visit(SimConfig { defer_persist: 1.0, ..SimConfig::default() });
    sim.add_jpeg(100);
    sim.pump();
    assert!(sim.has_pending_writes(), "a write of the attempt's record is under way");
    sim.page_mut().storage_lost(gone());
    sim.persist_all(); // the write begun before the loss commits
    assert_eq!(sim.page().storage_error(), Some(&gone()), "the loss stays");
    assert_eq!(sim.tabs[0].storage_errors, vec![Some(gone())], "reported once");
}

#[test]
fn later_failures_do_not_report_it_again() {
    let mut sim = Sim::first_visit(SimConfig { defer_persist: 1.0, ..SimConfig::default() });
    sim.add_jpeg(100);
    sim.pump();
    sim.page_mut().storage_lost(gone());
    sim.config.store_failure = 1.0; // every later write is refused
    for _ in 0..20 {
        sim.persist_all();
        sim.tick();
    }
    assert!(sim.stats.store_failures >= 2, "writes were tried and refused");
    assert_eq!(sim.page().storage_error(), Some(&gone()), "the first reason stays");
    assert_eq!(sim.tabs[0].storage_errors, vec![Some(gone())], "reported once");
}
