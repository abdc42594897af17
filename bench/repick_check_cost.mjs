// What checking a re-picked file costs (issue 29): a 1 GiB video goes up in
// 8 MiB parts (the server's defaults) through the guest page in headless
// Chromium until half its parts are stored; the page is reloaded; the video
// is too large to be kept for a reload, so the guest picks it again. Before
// a byte is sent, the page asks the server which parts it holds and hashes
// each of them in the picked file (512 MiB). Measured: pick → the first
// storage PUT of the re-pick reaching the fault proxy (which counts it),
// against the time the other half takes to go up over an emulated
// 100 Mbit/s uplink (CDP) in the same run, which is what re-sending the
// stored half would have cost instead.
//
//   node bench/repick_check_cost.mjs [--mib 1024] [--rounds 2]
//
// Environment as bench/resent_after_cuts.mjs. Everything runs on loopback
// and stops by itself.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createEvent, TARGET, until } from "../tests/e2e/harness.mjs";
import { launch, openGuest, pick } from "../tests/e2e/pages.mjs";
import { writeSeededFile } from "./stack.mjs";
import { startStack, attempts, untilSettled } from "../tests/faults/stack.mjs";

const MIB = 1 << 20;
const args = process.argv.slice(2);
const arg = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const SIZE_MIB = arg("--mib", 1024);
const ROUNDS = arg("--rounds", 2);
const SIZE = SIZE_MIB * MIB;
const UPLINK = (100e6 / 8); // bytes per second

async function round(browser, path, seed) {
  writeSeededFile(path, SIZE_MIB, seed);
  const stack = await startStack(`repick-${seed}`);
  try {
    const ev = await createEvent(stack.server, { moderation: "none", maxFileBytes: 4 * SIZE, types: ["video/*"] });
    const context = await browser.newContext();
    const page = await openGuest(context, stack.guestUrl(ev));
    await pick(page, [path]);
    const [half] = await until("half the parts to be stored", async () => {
      const list = await attempts(page);
      return list.length === 1 && list[0].partCount && list[0].partsDone >= list[0].partCount / 2 && list;
    }, 600_000, 20);
    await page.reload();
    await page.waitForSelector("body[data-ready='1']");
    await until("the attempt to wait for its file", async () => {
      const list = await attempts(page);
      return list.length === 1 && list[0].transfer === "needs_file" && list;
    }, 60_000);
    const [before] = await attempts(page);
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: UPLINK });
    const putsBefore = (await stack.proxy.log()).requests.filter((r) => r.method === "PUT").length;
    const picked = Date.now();
    await pick(page, [path]);
    const first = await until("the first part PUT after the pick", async () => {
      const puts = (await stack.proxy.log()).requests.filter((r) => r.method === "PUT");
      const inFlight = (await stack.proxy.inFlight()).filter((r) => r.method === "PUT" && r.at_ms >= picked);
      const seen = [...puts.slice(putsBefore).map((r) => r.at_ms), ...inFlight.map((r) => r.at_ms)];
      return seen.length ? Math.min(...seen) : null;
    }, 600_000, 10);
    const [done] = await untilSettled(page, 1, 1_800_000);
    const finished = Date.now();
    await context.close();
    if (done.confirmation !== "confirmed" || done.id !== before.id) throw new Error(`round ${seed}: ${JSON.stringify(done)}`);
    const rest = SIZE - (before.partsDone * 8 * MIB);
    return {
      parts_stored_before: before.partsDone,
      part_count: before.partCount,
      pick_to_first_put_ms: first - picked,
      rest_mib: rest / MIB,
      rest_upload_ms: finished - first,
      stored_half_resend_ms_at_100mbit: Math.round(((SIZE - rest) / UPLINK) * 1000),
    };
  } finally {
    await stack.stop();
  }
}

const dir = join(TARGET, "bench-repick");
mkdirSync(dir, { recursive: true });
const path = join(dir, "video.mp4");
const browser = await launch();
try {
  const rounds = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round(browser, path, Date.now() % 1000 + i));
  console.log(JSON.stringify({ size_mib: SIZE_MIB, rounds }, null, 2));
  console.log(`
| round | parts stored before | pick → first PUT (checks the stored parts) | the other ${rounds[0].rest_mib} MiB over 100 Mbit/s | re-sending the stored half over 100 Mbit/s |
| --- | --- | --- | --- | --- |
${rounds.map((r, i) => `| ${i + 1} | ${r.parts_stored_before} of ${r.part_count} | ${(r.pick_to_first_put_ms / 1000).toFixed(2)} s | ${(r.rest_upload_ms / 1000).toFixed(1)} s | ${(r.stored_half_resend_ms_at_100mbit / 1000).toFixed(1)} s (at line rate) |`).join("\n")}`);
} finally {
  await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
