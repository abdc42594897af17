//! Picked files are copied into IndexedDB for a reload a few per
//! transaction (after a first one alone; at most 16 MiB or 64 files), so the attempts' own record writes
//! are not queued behind a copy of the whole pick; and a file whose attempt
//! is over before its turn is not copied at all (issue 34: 29 photos of
//! 4 MiB in one transaction held every record write of the page for
//! 0.4–0.5 s on a phone's CPU).

mod support;

use support::*;
use upload_once_core::attempt::FileInfo;
use upload_once_core::page::Added;

fn photos(n: usize) -> Vec<FileInfo> {
    (0..n)
        .map(|i| FileInfo {
            name: format!("photo-{i}.jpg"),
            size: 4 << 20,
            content_type: "image/jpeg".into(),
            last_modified: T0 - i as i64,
        })
        .collect()
}

#[test]
fn a_pick_of_ten_is_kept_one_then_four_at_a_time() {
    let mut sim = Sim::with_seed(51);
    sim.add_files(&photos(10));
    sim.run_until_idle();
    assert_eq!(sim.stats.keep_batches, vec![1, 4, 4, 1]);
    sim.check_exactly_once().unwrap();
}

#[test]
fn small_files_share_a_transaction_up_to_sixty_four() {
    let mut sim = Sim::with_seed(53);
    let small: Vec<FileInfo> = (0..100)
        .map(|i| FileInfo {
            name: format!("s-{i}.jpg"),
            size: 64,
            content_type: "image/jpeg".into(),
            last_modified: T0 - i,
        })
        .collect();
    sim.add_files(&small);
    sim.run_until_idle();
    assert_eq!(sim.stats.keep_batches, vec![1, 64, 35]);
}

#[test]
fn a_file_cancelled_before_its_turn_is_not_copied() {
    let mut sim = Sim::with_seed(52);
    let plan = sim.add_files(&photos(3));
    let ids: Vec<_> = plan
        .outcomes
        .iter()
        .map(|o| match o {
            Added::New(id) => *id,
            other => panic!("{other:?}"),
        })
        .collect();
    // The add is written; nothing was copied yet. The guest cancels the last.
    assert!(sim.stats.keep_batches.is_empty());
    assert!(sim.cancel(ids[2]));
    sim.run_until_idle();
    let cancelled = sim.record(ids[2]).blob_key;
    assert!(!sim.kept.contains(&cancelled), "the cancelled file was copied");
    assert_eq!(sim.stats.keep_batches.iter().sum::<usize>(), 2, "the two others were: {:?}", sim.stats.keep_batches);
}
