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
// itself over the DevTools protocol (`--remote-debugging-pipe`): a second
// tab opened with `Target.createTarget` hides the first one, as a guest
// switching apps would.
//
//   node bench/hidden_tab.mjs [--scenario uplink|tail] [--rounds 3] [--files 30] [--kb 400] [--uplink-mbit 2] [--hide-before 0] [--md out.md]
//
// Environment: UPLOAD_ONCE_SERVER_BIN, UPLOAD_ONCE_FAULT_PROXY_BIN,
// UPLOAD_ONCE_CHROMIUM (the e2e harness's defaults). The package in pkg/ is
// the one measured (`cargo xtask test size` builds it).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CHROMIUM, CHROMIUM_ARGS, TARGET, createEvent, photos, until } from "../tests/e2e/harness.mjs";
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

/** Chromium over its DevTools pipe (fd 3 in, fd 4 out, NUL-separated JSON). */
async function chromium() {
  const profile = mkdtempSync(join(TARGET, "bench-hidden-profile-"));
  const child = spawn(CHROMIUM, [
    ...CHROMIUM_ARGS, "--remote-debugging-pipe", `--user-data-dir=${profile}`,
    `--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/${GRACE_S}`, "about:blank",
  ], { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] });
  const [input, output] = [child.stdio[3], child.stdio[4]];
  let next = 1, pending = "";
  const waiting = new Map();
  const listeners = [];
  output.on("data", (chunk) => {
    pending += chunk.toString("utf8");
    let end;
    while ((end = pending.indexOf("\0")) >= 0) {
      const message = JSON.parse(pending.slice(0, end));
      pending = pending.slice(end + 1);
      if (message.id && waiting.has(message.id)) {
        const { resolve, reject } = waiting.get(message.id);
        waiting.delete(message.id);
        if (message.error) reject(new Error(`${message.error.message} ${message.error.data ?? ""}`));
        else resolve(message.result);
      } else if (message.method) {
        for (const l of listeners) l(message);
      }
    }
  });
  const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    input.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
  });
  const { targetInfos } = await until("Chromium's first tab", async () => {
    const r = await send("Target.getTargets");
    return r.targetInfos.some((t) => t.type === "page") && r;
  }, 20_000);
  return {
    send,
    on: (fn) => listeners.push(fn),
    firstTab: targetInfos.find((t) => t.type === "page").targetId,
    close: async () => {
      await send("Browser.close").catch(() => {});
      await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A tab: its session, an evaluator, and the file input's node. */
async function attach(browser, targetId) {
  const { sessionId } = await browser.send("Target.attachToTarget", { targetId, flatten: true });
  const send = (method, params) => browser.send(method, params, sessionId);
  const evaluate = async (expression) => {
    const r = await send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`${expression}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
  };
  return { sessionId, send, evaluate };
}

/** One run: 30 photos picked in a guest page, visible or hidden; ms from the pick until every one is confirmed. */
async function run(browser, stack, files, { hidden, worker }, seed) {
  const ev = await createEvent(stack.server, { moderation: "none" });
  await stack.proxy.reset();
  await stack.proxy.seed(seed);
  await stack.proxy.rules(...RULES);
  const { targetId } = await browser.send("Target.createTarget", { url: "about:blank", newWindow: false });
  const tab = await attach(browser, targetId);
  await tab.send("Page.enable");
  if (!worker) await tab.send("Page.addScriptToEvaluateOnNewDocument", { source: "delete globalThis.Worker;" });
  await tab.send("Page.navigate", { url: stack.guestUrl(ev) });
  await until("the guest page to be ready", () => tab.evaluate("document.body?.dataset.ready === '1'").catch(() => false), 30_000);
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
    cover = (await browser.send("Target.createTarget", { url: "about:blank", newWindow: false })).targetId;
    await until("the guest page to be hidden", async () => (await tab.evaluate("document.visibilityState")) === "hidden", 5_000);
    await new Promise((r) => setTimeout(r, HIDE_BEFORE_S * 1000));
  }
  const { root } = await tab.send("DOM.getDocument", { depth: 0 });
  const { nodeId } = await tab.send("DOM.querySelector", { nodeId: root.nodeId, selector: "[data-testid='file-input']" });
  const started = performance.now();
  await tab.send("DOM.setFileInputFiles", { nodeId, files });
  if (hidden && !cover) {
    // The guest picks, then switches away: another tab in front, in the
    // same window, hides the guest page.
    cover = (await browser.send("Target.createTarget", { url: "about:blank", newWindow: false })).targetId;
    await until("the guest page to be hidden", async () => (await tab.evaluate("document.visibilityState")) === "hidden", 5_000);
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
  await browser.send("Target.closeTarget", { targetId });
  return { ms, lost };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = mkdtempSync(join(TARGET, "bench-hidden-files-"));
const stack = await startStack("hidden-tab");
const browser = await chromium();
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
      const files = photos(FILES, KB * 1000, `hidden-${round}-${i}`).map((p) => {
        const path = join(roundDir, p.name);
        writeFileSync(path, p.buffer);
        return path;
      });
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
