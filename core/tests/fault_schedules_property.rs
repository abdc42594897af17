//! Property: whatever the network does (requests lost before or after the
//! server commits them, 503s, 429s with Retry-After), however often the page
//! reloads (with or without losing the file bytes), whatever a second tab of
//! the same browser does meanwhile (opening, restoring, taking attempts over,
//! closing) and however often IndexedDB refuses a write, once the server is
//! reachable again every file whose bytes are held ends up stored exactly
//! once — large files in parts, no part stored twice, no parts left behind
//! — no two pages ever drive one attempt at once (the simulation checks
//! every request against the lock holder), and nothing is left half-done.

mod support;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use support::*;
use upload_once_core::retry::RetryPolicy;

#[derive(Clone, Debug)]
struct Scenario {
    seed: u64,
    fault_probability: f64,
    weights: [u32; 5],
    reload_probability: f64,
    lossy_reload_probability: f64,
    sleep_probability: f64,
    files: usize,
    concurrency: usize,
    attempt_ttl_ms: i64,
    url_ttl_ms: i64,
    defer_persist: f64,
    fault_ticks: usize,
    tab_probability: f64,
    store_failure: f64,
    /// Every other file is large and goes up in parts.
    multipart: bool,
}

prop_compose! {
    fn scenario()(
        seed in any::<u64>(),
        fault_probability in 0.0..0.5f64,
        weights in prop::array::uniform5(0u32..4),
        reload_probability in prop_oneof![Just(0.0), 0.0..0.06f64],
        lossy_reload_probability in 0.0..1.0f64,
        sleep_probability in prop_oneof![Just(0.0), 0.0..0.05f64],
        files in 1usize..=8,
        concurrency in 1usize..=4,
        attempt_ttl_ms in prop_oneof![Just(3 * MINUTE), Just(30 * MINUTE), Just(24 * HOUR)],
        url_ttl_ms in prop_oneof![Just(30 * SECOND), Just(2 * MINUTE), Just(15 * MINUTE)],
        defer_persist in prop_oneof![Just(0.0), 0.0..0.5f64],
        fault_ticks in 20usize..400,
        tab_probability in prop_oneof![Just(0.0), 0.0..0.05f64],
        store_failure in prop_oneof![Just(0.0), 0.0..0.3f64],
        multipart in any::<bool>(),
    ) -> Scenario {
        Scenario {
            seed,
            fault_probability,
            weights,
            reload_probability,
            lossy_reload_probability,
            sleep_probability,
            files,
            concurrency,
            attempt_ttl_ms,
            url_ttl_ms,
            defer_persist,
            fault_ticks,
            tab_probability,
            store_failure,
            multipart,
        }
    }
}

struct Run {
    sim: Sim,
    faults_injected: usize,
}

fn run(s: &Scenario) -> Result<Run, String> {
    let mut config = SimConfig {
        seed: s.seed,
        concurrency: s.concurrency,
        // Large enough that faults never exhaust an attempt: this property is
        // about exactly-once, not about giving up.
        policy: RetryPolicy { base_ms: 500, cap_ms: 20_000, max_retries: 100_000 },
        defer_persist: s.defer_persist,
        store_failure: s.store_failure,
        max_steps: 50_000,
        ..SimConfig::default()
    };
    config.server.attempt_ttl_ms = s.attempt_ttl_ms;
    config.server.url_ttl_ms = s.url_ttl_ms;
    if s.multipart {
        config.server.multipart_threshold = 40;
        config.server.part_size = 8;
    }
    // Large files (6 to 12 parts) and small ones alternate.
    let size = |n: usize| {
        if s.multipart && n % 2 == 0 { 41 + (n as u64 * 7) % 50 } else { 10 + n as u64 }
    };
    let mut sim = Sim::new(config);
    sim.faults.random =
        Some(RandomFaults { probability: s.fault_probability, weights: s.weights, max_retry_after_ms: 10_000 });

    let mut plan = TestRng::new(s.seed.rotate_left(17) ^ 0xA11CE);
    let mut add_at: Vec<usize> =
        (0..s.files).map(|i| if i == 0 { 0 } else { plan.below((s.fault_ticks / 2) as u64 + 1) as usize }).collect();
    add_at.sort_unstable();
    let mut added = 0;
    // In two runs of three the guest pauses and resumes transfers too.
    let pause_probability = if s.seed % 3 == 0 { 0.0 } else { 0.03 };

    for tick in 0..s.fault_ticks {
        while added < add_at.len() && add_at[added] <= tick {
            sim.add_jpeg(size(added));
            added += 1;
        }
        if plan.chance(s.reload_probability) {
            let lose_blob = if plan.chance(s.lossy_reload_probability) { 0.5 } else { 0.0 };
            sim.reload(Reload { lose_blob, inflight_reached_server: 0.5 });
        }
        if plan.chance(s.tab_probability) {
            // A second tab of the same browser: it opens and restores, or it
            // reloads, or it closes and leaves its attempts to the first.
            match (sim.tabs.len(), plan.below(3)) {
                (1, _) => {
                    sim.open_tab();
                }
                (_, 0) => {
                    sim.close_tab(1);
                    sim.open_tab();
                }
                _ => sim.close_tab(1),
            }
        }
        if plan.chance(pause_probability) {
            let ids: Vec<_> = sim.page().records().map(|r| r.id).collect();
            if !ids.is_empty() {
                let id = ids[plan.below(ids.len() as u64) as usize];
                if sim.record(id).paused {
                    sim.resume(id);
                } else {
                    sim.pause(id);
                }
            }
        }
        if plan.chance(s.sleep_probability) {
            // The tab was frozen or the laptop closed: time jumps ahead,
            // past signed URLs and sometimes past the attempt TTL.
            sim.advance(plan.range(SECOND, 10 * MINUTE));
        }
        match sim.tick() {
            Tick::Progress => {}
            Tick::Idle if added == add_at.len() => break,
            Tick::Idle => {}
            Tick::Stuck => return Err(format!("stuck during the fault phase\n{}", sim.dump())),
        }
    }
    while added < add_at.len() {
        sim.add_jpeg(size(added));
        added += 1;
    }

    // The server and IndexedDB work from now on, the guest's page stays and
    // the other tab goes: its attempts come back to the guest's page.
    sim.faults.enabled = false;
    sim.config.store_failure = 0.0;
    while sim.tabs.len() > 1 {
        sim.close_tab(1);
    }
    // The guest resumes whatever shows as paused, until nothing does (an
    // attempt that expires while paused hands the pause to its successor).
    loop {
        sim.try_run_until_idle()?;
        let paused: Vec<_> = sim.page().records().filter(|r| r.paused && !r.is_terminal()).map(|r| r.id).collect();
        if paused.is_empty() {
            break;
        }
        for id in paused {
            sim.resume(id);
        }
    }
    sim.check_exactly_once()?;
    let faults_injected = sim.faults.injected.len();
    Ok(Run { sim, faults_injected })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: RngSeed::Fixed(0x00DD_BA11),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_held_file_is_stored_exactly_once_under_any_fault_schedule(s in scenario()) {
        if let Err(e) = run(&s) {
            prop_assert!(false, "{:?}\n{}", s, e);
        }
    }
}

/// The property is only worth something if the schedules really hit the
/// interesting paths. These fixed scenarios check that faults, reloads,
/// lost blobs and expiry successors all occur and the checks still hold.
#[test]
fn heavy_fault_schedules_exercise_every_recovery_path() {
    // faults, reloads, successors, status checks, renews, lost blobs, lock
    // waits, take-overs and followed changes, refused writes, second tabs
    let mut totals = [0usize; 13];
    for seed in 0..24u64 {
        let s = Scenario {
            seed,
            fault_probability: 0.45,
            weights: [1, 1, 1, 1, 1],
            reload_probability: 0.04,
            lossy_reload_probability: 0.3,
            sleep_probability: 0.02,
            files: 8,
            concurrency: 1 + (seed % 4) as usize,
            attempt_ttl_ms: 3 * MINUTE,
            url_ttl_ms: 30 * SECOND,
            defer_persist: 0.3,
            fault_ticks: 400,
            tab_probability: 0.03,
            store_failure: 0.15,
            multipart: true,
        };
        let run = run(&s).unwrap_or_else(|e| panic!("{s:?}\n{e}"));
        let sim = &run.sim;
        totals[0] += run.faults_injected;
        totals[1] += sim.stats.reloads;
        totals[2] += sim.scheduler().records().filter(|r| r.replaces.is_some()).count();
        totals[3] += sim.stats.count(ReqKind::Status);
        totals[4] += sim.stats.count(ReqKind::Renew);
        totals[5] += sim.files.iter().filter(|f| !sim.held(f.blob_key)).count();
        totals[6] += sim.stats.lock_waits;
        totals[7] += sim.stats.loads;
        totals[8] += sim.stats.store_failures;
        totals[9] += sim.stats.tabs_opened;
        totals[10] += sim.stats.count(ReqKind::UploadPart);
        totals[11] += sim.faults.injected.iter().filter(|(k, _)| *k == ReqKind::UploadPart).count();
        totals[12] += sim.stats.adds_refused;
    }
    let names = [
        "faults",
        "reloads",
        "successors",
        "status checks",
        "renews",
        "lost blobs",
        "lock waits",
        "record reads (take-over, other tabs)",
        "refused writes",
        "second tabs",
        "parts sent",
        "faults on parts",
        "adds refused (their records could not be stored)",
    ];
    for (name, total) in names.iter().zip(totals) {
        assert!(total > 0, "no {name} in any heavy schedule: the property would not test them ({totals:?})");
    }
}
