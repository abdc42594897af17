// Exactly once through instance loss: the fault suite's soak (100 files,
// 3 of them in parts, answers dropped and pages reloaded at random) from
// Chromium, through the fault proxy and nginx, to two instances on one
// PostgreSQL and one moto bucket. During it, instance A is killed (SIGKILL)
// while a file is part-way through its parts and a confirm is at work on A,
// and started again; then B is stopped gracefully (SIGTERM) while at work,
// and started again. At the end every file is stored once: nothing lost, no
// duplicate, no object without its record or record without its object,
// and no multipart upload left open in the bucket.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { soak, SOAK_SERVER_ARGS } from "../faults/soak.mjs";
import { startCluster, restartEachInstance } from "./cluster.mjs";

let cluster;
before(async () => { cluster = await startCluster("once", { serverArgs: SOAK_SERVER_ARGS, faults: true }); });
after(async () => { await cluster?.stop(); });

test("100 files through nginx, one instance killed and one restarted: each stored once, nothing left behind", async () => {
  const result = await soak(
    cluster,
    // Faults and reloads for two minutes; no CPU hogs: the two instances,
    // nginx, moto, PostgreSQL and Chromium already share the two cores.
    { uploads: 100, large: 3, minutes: 2, seed: 7, reloadEvery: 2000, uplink: 1_000_000, cpuHog: 0 },
    { during: restartEachInstance(cluster) },
  );
  console.log(result.line);
  console.log(JSON.stringify(result.during));
  const { killed, stopped } = result.during ?? {};
  assert.ok(killed && stopped, "both instances were restarted during the run");
  assert.ok(killed.confirmsCut >= 1 && killed.partsOfALargeFile.includes(" of "), "A was killed at work on a confirm, with a file part-way through its parts");
  assert.equal(stopped.exit.code, 0, "B stopped gracefully on SIGTERM");
  assert.equal(stopped.answered502, 0, "B finished what it was at work on");
  assert.deepEqual(
    { confirmed: result.confirmed, lost: result.lost, duplicates: result.duplicates, orphans: result.orphans, partsLeft: result.partsLeft },
    { confirmed: 100, lost: 0, duplicates: 0, orphans: 0, partsLeft: 0 },
  );
});
