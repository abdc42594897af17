// A hidden tab against a visible one (issue 33): the guest page uploads 30
// photos of 400 kB over a 2 Mbit/s uplink (DevTools' network emulation)
// through the fault proxy, which drops answers (confirms answered
// and lost, authorizes and statuses lost before the server sees them), so
// the uploader waits on its backoff timers again and again. Each round runs
// four ways, interleaved:
//
// - visible, and hidden (another tab in front of it in the same window),
// - with the package as it ships (each wait also armed in its timer worker),
//   and with `Worker` removed from the page before its scripts run (the
//   page's own timers alone, which is what the uploader did before).
//
// Chromium runs with intensive wake-up throttling forced on (its grace
// period cut from 5 minutes to 1 second), on top of the one-wake-up-a-second
// throttling every hidden page gets.
//
// Playwright keeps every page it drives visible, so this drives Chromium
// itself over the DevTools protocol (tests/e2e/cdp.mjs): a second tab
// opened in the same window hides the first one, as a guest switching apps
// would.
//
//   node bench/hidden_tab.mjs [--scenario uplink|tail|probe] [--rounds 3] [--files 30] [--kb 400] [--uplink-mbit 2] [--hide-before 0] [--md out.md]
//
// Environment: UPLOAD_ONCE_SERVER_BIN, UPLOAD_ONCE_FAULT_PROXY_BIN,
// UPLOAD_ONCE_CHROMIUM (the e2e harness's defaults). The package in pkg/ is
// the one measured (`cargo xtask test size` builds it).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TARGET, createEvent, until } from "../tests/e2e/harness.mjs";
import { hide, openGuestTab, openTab, photosOnDisk, pickFiles, startChromium } from "../tests/e2e/cdp.mjs";
import { startStack } from "../tests/faults/stack.mjs";

const args = process.argv.slice(2);
const arg = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const ROUNDS = Number(arg("--rounds", 3));
const FILES = Number(arg("--files", args.includes("tail") ? 1 : 30));
const MD = arg("--md", null);
// `uplink` (the default): 30 photos over a phone's uplink, answers lost at
// random. `tail`: one photo whose first four confirm answers are lost, in a
// page hidden for 40 s before the pick (past the intensive throttling's
// start), no uplink emulation: nothing but the retry's waits is left.
const SCENARIO = arg("--scenario", "uplink");
const TAIL = SCENARIO === "tail";
const KB = Number(arg("--kb", TAIL ? 200 : 400));
const UPLINK_MBIT = Number(arg("--uplink-mbit", TAIL ? 0 : 2));
const HIDE_BEFORE_S = Number(arg("--hide-before", TAIL ? 40 : 0));
const GRACE_S = 1;

/** The faults: answers lost, so the uploader retries after its backoff. */
const RULES = TAIL ? [
  { method: "POST", path: "/v1/attempts/*/confirm", probability: 1, times: 4, action: { kind: "drop_after" } },
] : [
  { method: "POST", path: "/v1/attempts/*/confirm", probability: 0.35, action: { kind: "drop_after" } },
  { method: "POST", path: "/v1/events/*/attempts", probability: 0.2, action: { kind: "drop_before" } },
  { method: "POST", path: "/v1/attempts/status", probability: 0.2, action: { kind: "drop_before" } },
];

/** One run: 30 photos picked in a guest page, visible or hidden; ms from the pick until every one is confirmed. */
async function run(browser, stack, files, { hidden, worker }, seed) {
  const ev = await createEvent(stack.server, { moderation: "none" });
  await stack.proxy.reset();
  await stack.proxy.seed(seed);
  await stack.proxy.rules(...RULES);
  const tab = await openGuestTab(browser, stack.guestUrl(ev), { initScript: worker ? undefined : "delete globalThis.Worker;" });
  // A phone's uplink: the job lasts long enough for the intensive
  // throttling to start (it waits for the page to be hidden past its grace
  // period and silent for 30 s).
  if (UPLINK_MBIT > 0) {
    await tab.send("Network.enable");
    await tab.send("Network.emulateNetworkConditions", {
      offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: (UPLINK_MBIT * 1e6) / 8,
    });
  }
  let cover = null;
  if (hidden && HIDE_BEFORE_S > 0) {
    cover = await hide(browser, tab);
    await new Promise((r) => setTimeout(r, HIDE_BEFORE_S * 1000));
  }
  const started = performance.now();
  await pickFiles(tab, "[data-testid='file-input']", files);
  if (hidden && !cover) {
    // The guest picks, then switches away: another tab in front, in the
    // same window, hides the guest page.
    cover = await hide(browser, tab);
  }
  await until(`${files.length} photos confirmed`, async () => {
    const list = await tab.evaluate("JSON.stringify(window.uploader.list().map((a) => a.confirmation))");
    const states = JSON.parse(list);
    return states.length === files.length && states.every((c) => c === "confirmed");
  }, 600_000, 50);
  const ms = performance.now() - started;
  const state = await tab.evaluate("document.visibilityState");
  if (state !== (hidden ? "hidden" : "visible")) throw new Error(`the page was ${state} at the end`);
  const workers = await tab.evaluate("typeof Worker === 'function'");
  if (workers !== worker) throw new Error(`Worker is ${workers ? "there" : "missing"} in the page`);
  const lost = (await stack.proxy.log()).requests.filter((r) => r.fault).length;
  if (cover) await browser.send("Target.closeTarget", { targetId: cover });
  await tab.close();
  return { ms, lost };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * `probe`: what throttling does to the timers themselves, without the
 * uploader. A chain of seven 200 ms timers, each set from the last one's
 * callback, on the page and in a dedicated worker: visible, at once after
 * the page is hidden, and after it has been hidden 35 s.
 */
async function probe(browser) {
  const tab = await openTab(browser);
  const chain = "new Promise((done) => { const t0 = performance.now(); let i = 0; const f = () => (++i > 6 ? done(performance.now() - t0) : setTimeout(f, 200)); setTimeout(f, 200); })";
  const inWorker = `new Promise((done) => { const w = new Worker(URL.createObjectURL(new Blob([${JSON.stringify(`onmessage = () => { ${chain.replace("done(", "postMessage(")}; }`)}]))); w.onmessage = (e) => { w.terminate(); done(e.data); }; w.postMessage(0); })`;
  const row = async (when) => {
    const [page, worker] = [await tab.evaluate(chain), await tab.evaluate(inWorker)];
    console.log(`${when}: page ${(page / 1000).toFixed(2)} s, worker ${(worker / 1000).toFixed(2)} s`);
    return `| ${when} | ${(page / 1000).toFixed(2)} | ${(worker / 1000).toFixed(2)} |`;
  };
  const lines = ["| seven chained 200 ms timers (1.4 s) | on the page (s) | in a worker (s) |", "| --- | --- | --- |", await row("visible")];
  const cover = await hide(browser, tab);
  lines.push(await row("hidden, at once"));
  await new Promise((r) => setTimeout(r, 35_000));
  lines.push(await row("hidden for 35 s"));
  await browser.send("Target.closeTarget", { targetId: cover });
  await tab.close();
  return lines;
}

if (SCENARIO === "probe") {
  const browser = await startChromium([`--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/${GRACE_S}`]);
  try {
    const lines = await probe(browser);
    console.log(lines.join("\n"));
    if (MD) writeFileSync(MD, lines.join("\n") + "\n");
  } finally {
    await browser.close();
  }
  process.exit(0);
}

const dir = mkdtempSync(join(TARGET, "bench-hidden-files-"));
const stack = await startStack("hidden-tab");
const browser = await startChromium([`--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/${GRACE_S}`]);
const ways = [
  { name: "visible, as shipped", hidden: false, worker: true },
  { name: "hidden, as shipped", hidden: true, worker: true },
  { name: "visible, page timers only", hidden: false, worker: false },
  { name: "hidden, page timers only", hidden: true, worker: false },
];
const times = Object.fromEntries(ways.map((w) => [w.name, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, way] of ways.entries()) {
      // Photos of their own per run (the server keeps one media per content).
      const roundDir = join(dir, `${round}-${i}`);
      mkdirSync(roundDir);
      const files = photosOnDisk(roundDir, FILES, KB * 1000, `hidden-${round}-${i}`);
      // The same faults for the four ways of a round.
      const r = await run(browser, stack, files, way, 1000 + round);
      times[way.name].push(r.ms);
      console.log(`round ${round + 1} ${way.name}: ${(r.ms / 1000).toFixed(2)} s (${r.lost} requests broken)`);
    }
  }
} finally {
  await browser.close();
  await stack.stop();
  rmSync(dir, { recursive: true, force: true });
}

const base = median(times["visible, as shipped"]);
const lines = [
  `| way | median (s) | runs (s) | × visible as shipped |`,
  `| --- | --- | --- | --- |`,
  ...ways.map((w) => `| ${w.name} | ${(median(times[w.name]) / 1000).toFixed(2)} | ${times[w.name].map((t) => (t / 1000).toFixed(2)).join(", ")} | ${(median(times[w.name]) / base).toFixed(2)} |`),
];
console.log(lines.join("\n"));
console.log(`hidden / visible, as shipped: ${(median(times["hidden, as shipped"]) / base).toFixed(2)}; page timers only: ${(median(times["hidden, page timers only"]) / median(times["visible, page timers only"])).toFixed(2)}`);
if (MD) writeFileSync(MD, lines.join("\n") + "\n");
