//! `maxFilesPerPick` and `maxPickBytes` (issue 33, "limits before any
//! network"): a pick over either is refused whole, every file with the same
//! stable code, before anything is recorded, held, kept or sent. Within
//! them, a pick goes on as any other.

mod support;

use support::*;
use upload_once_core::attempt::{Confirmation, FileInfo};
use upload_once_core::page::Added;
use upload_once_core::restrictions::PickLimits;

fn pick(n: usize, size: u64) -> Vec<FileInfo> {
    (0..n)
        .map(|i| FileInfo {
            name: format!("photo-{i}.jpg"),
            size,
            content_type: "image/jpeg".into(),
            last_modified: T0 - HOUR,
        })
        .collect()
}

fn refused_codes(outcomes: &[Added]) -> Vec<&'static str> {
    outcomes
        .iter()
        .map(|o| match o {
            Added::Refused { error, .. } => error.code.as_str(),
            other => panic!("expected a refusal, got {other:?}"),
        })
        .collect()
}

fn capped(max_files: Option<u32>, max_bytes: Option<u64>) -> Sim {
    Sim::first_visit(SimConfig { pick_limits: PickLimits { max_files, max_bytes }, ..SimConfig::default() })
}

fn nothing_remains(sim: &mut Sim) {
    sim.run_until_idle();
    assert_eq!(sim.page().records().count(), 0, "no record");
    assert!(sim.stats.sent.iter().all(|s| s.command.id().is_none()), "no request for an attempt: {:?}", sim.stats.sent);
    assert!(sim.server.attempts.is_empty(), "the server heard of nothing");
    assert!(sim.tabs[0].memory.is_empty(), "no file held");
}

#[test]
fn one_file_too_many_refuses_every_file_of_the_pick() {
    let mut sim = capped(Some(3), None);
    let plan = sim.add_files(&pick(4, 100));
    assert_eq!(refused_codes(&plan.outcomes), vec!["too_many_files"; 4]);
    assert!(plan.new_records.is_empty() && plan.hold.is_empty() && plan.keep.is_empty());
    let Added::Refused { file_name, error } = &plan.outcomes[0] else { unreachable!() };
    assert_eq!(file_name, "photo-0.jpg");
    assert!(error.message.contains("4 files") && error.message.contains("at most 3 files"), "{}", error.message);
    nothing_remains(&mut sim);
}

#[test]
fn a_pick_over_the_bytes_refuses_every_file_of_the_pick() {
    let mut sim = capped(None, Some(1_000));
    let plan = sim.add_files(&pick(3, 400));
    assert_eq!(refused_codes(&plan.outcomes), vec!["pick_too_large"; 3]);
    let Added::Refused { error, .. } = &plan.outcomes[2] else { unreachable!() };
    assert!(error.message.contains("1.2 KB") && error.message.contains("at most 1 KB"), "{}", error.message);
    nothing_remains(&mut sim);
}

#[test]
fn sizes_that_overflow_do_not_slip_under_the_cap() {
    let mut sim = capped(None, Some(1_000));
    let plan = sim.add_files(&pick(2, u64::MAX / 2 + 1));
    assert_eq!(refused_codes(&plan.outcomes), vec!["pick_too_large"; 2]);
    nothing_remains(&mut sim);
}

#[test]
fn a_pick_at_the_caps_goes_up_once_each() {
    let mut sim = capped(Some(3), Some(1_200));
    let plan = sim.add_files(&pick(3, 400));
    assert!(plan.outcomes.iter().all(|o| matches!(o, Added::New(_))), "{:?}", plan.outcomes);
    sim.run_until_idle();
    assert!(sim.page().records().all(|r| r.confirmation == Confirmation::Confirmed));
    assert_eq!(sim.server.media.len(), 3);
    // The caps are per pick: the next one is checked on its own.
    let plan = sim.add_files(&pick(4, 10));
    assert_eq!(refused_codes(&plan.outcomes), vec!["too_many_files"; 4]);
    sim.check_exactly_once().unwrap();
}
