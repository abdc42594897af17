// A phone's uplink: the whole job, files picked → every file confirmed, for
// four uploaders on the same reference server in the same run, interleaved
// (bench/www/uplink.js): the bare protocol by hand (authorize, XHR PUT,
// confirm), upload-once, Uppy + aws-s3, and Uppy + aws-s3 + golden-retriever;
// three requests at once each. Each run is a fresh Chromium profile on disk
// (IndexedDB as a phone's, not an incognito one in memory) and a fresh event
// (nothing is a duplicate), with the page's uplink emulated through CDP
// (`Network.emulateNetworkConditions`) and its CPU slowed
// (`Emulation.setCPUThrottlingRate`). every run also traces where each
// file's time went (bench/www/trace.js).
//
//   node bench/phone_uplink.mjs [--quick] [--rounds N] [--slow-rounds N] [--only-load 4|256]
//                               [--profiles 100x1,100x4,20x1,20x4,loop]
//                               [--variants bare,once,uppy,uppy-gr] [--json FILE] [--md FILE]
//
// The server is told to send every file in one PUT (`--multipart-threshold
// 8GiB`), so a 256 MiB file goes the same way in every variant.
// Environment: UPLOAD_ONCE_SERVER_BIN, UPLOAD_ONCE_CHROMIUM, UPLOAD_ONCE_ROOT.
import { mkdirSync, rmSync, existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { ROOT, CHROMIUM, MiB, CHROMIUM_ARGS, median, startServer, writeRandomFile, createEvent, buildUppyPage, pageFailure } from "./stack.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const QUICK = args.includes("--quick");
const ROUNDS = Number(opt("--rounds", QUICK ? 1 : 3));
// The 20 Mbit/s rows take minutes a run: fewer rounds there (`--slow-rounds`).
const SLOW_ROUNDS = Number(opt("--slow-rounds", ROUNDS));
const VARIANTS = opt("--variants", "bare,once,uppy,uppy-gr").split(",");
const LOADS = [
  { key: "4", name: QUICK ? "4 × 1 MiB" : "30 × 4 MiB", n: QUICK ? 4 : 30, bytes: (QUICK ? 1 : 4) * MiB },
  { key: "256", name: QUICK ? "1 × 16 MiB" : "1 × 256 MiB", n: 1, bytes: (QUICK ? 16 : 256) * MiB },
].filter((l) => !args.includes("--only-load") || l.key === opt("--only-load"));
// Uplink in Mbit/s (download 100 Mbit/s), 20 ms latency, CPU slowdown.
const ALL_PROFILES = {
  "100x1": { name: "100 Mbit/s, 20 ms, CPU 1×", up: 100, cpu: 1 },
  "100x4": { name: "100 Mbit/s, 20 ms, CPU 4× slower", up: 100, cpu: 4 },
  "20x1": { name: "20 Mbit/s, 20 ms, CPU 1×", up: 20, cpu: 1 },
  "20x4": { name: "20 Mbit/s, 20 ms, CPU 4× slower", up: 20, cpu: 4 },
  loop: { name: "loopback, CPU 1×", up: null, cpu: 1 },
};
const PROFILES = opt("--profiles", QUICK ? "100x4" : "100x1,100x4,20x1,20x4,loop").split(",").map((k) => ({ key: k, ...ALL_PROFILES[k] }));

/** One run: a fresh profile, the page, the emulation, the pick, the job. */
async function run(server, variant, load, profile, files) {
  const dir = join(ROOT, "target/bench-profiles", `uplink-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const context = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const page = context.pages()[0] ?? await context.newPage();
    const failure = pageFailure(page);
    await page.goto(`${server.base}/uplink.html`);
    await page.waitForSelector("body[data-ready='1']");
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    if (profile.up) {
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false, latency: 20, uploadThroughput: (profile.up * 1e6) / 8, downloadThroughput: 100e6 / 8,
      });
    }
    if (profile.cpu > 1) await cdp.send("Emulation.setCPUThrottlingRate", { rate: profile.cpu });
    const ev = await createEvent(server);
    const job = page.evaluate(({ variant, ctx }) => window.runVariant(variant, ctx), {
      variant, ctx: { event: ev.event.slug, code: ev.guest_code, db: `uplink-${Date.now()}` },
    });
    job.catch(() => {});
    await Promise.race([failure, page.waitForFunction(() => window.__armed === true, null, { timeout: 60_000 })]);
    if (PROFILE) {
      await cdp.send("Profiler.enable");
      await cdp.send("Profiler.setSamplingInterval", { interval: PROFILE_MS ? 100 : 500 });
      await cdp.send("Profiler.start");
    }
    await page.setInputFiles("#pick", files);
    const ms = await Promise.race([failure, job]);
    if (PROFILE) printProfile(variant, (await cdp.send("Profiler.stop")).profile);
    const trace = await page.evaluate(() => window.traceOf());
    return { ms, trace };
  } finally {
    await context.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `--profile`: the page's main thread, sampled (CDP Profiler) from the pick to the end; the top functions by self time.
 * `--profile-ms N`: only the first N ms after the pick, sampled every 0.1 ms (where the first file's time before its first byte goes).
 */
const PROFILE_MS = Number(opt("--profile-ms", "0"));
const PROFILE = args.includes("--profile") || PROFILE_MS > 0;
function printProfile(variant, profile) {
  const self = new Map();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const dt = profile.timeDeltas;
  // With --profile-ms, the window starts at the first sample in the page's
  // own script (the pick's change handler), not at the profiler's start
  // (before the files are handed to the page).
  let at = 0; // µs since the profile started
  const times = dt.map((d) => (at += d));
  const first = profile.samples.findIndex((id) => (byId.get(id).callFrame.url || "").includes("uplink.js"));
  const from = PROFILE_MS ? times[Math.max(0, first)] : 0;
  profile.samples.forEach((id, i) => {
    if (PROFILE_MS && (times[i] < from || times[i] > from + PROFILE_MS * 1000)) return;
    const n = byId.get(id);
    const key = `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").pop()}:${n.callFrame.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + (dt[i] ?? 0) / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25);
  console.log(`${variant}: profile ${Math.round(total)} ms sampled`);
  for (const [k, ms] of top) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${k}`);
}

/** Medians over files of each step's time from the one before it, and the first and tenth file's first byte. */
function breakdown(traces) {
  const steps = [["durable", "pick"], ["hashed", "durable"], ["authSent", "hashed"], ["authorized", "authSent"], ["firstByte", "authorized"],
    ["lastByte", "firstByte"], ["confirmSent", "lastByte"], ["confirmed", "confirmSent"]];
  const out = {};
  for (const [to, from] of steps) {
    // A step the variant does not take (no record, no hash) is left out.
    const xs = traces.flatMap((t) => t.files.filter((f) => f[to] !== null).map((f) => f[to] - (from === "pick" ? 0 : f[from] ?? f[to])));
    out[`${from}→${to}`] = xs.length ? median(xs) : null;
  }
  out.firstFileFirstByte = median(traces.map((t) => t.files[0]?.firstByte ?? NaN).filter(Number.isFinite));
  out.tenthFileFirstByte = traces.every((t) => t.files.length >= 10) ? median(traces.map((t) => t.files[9].firstByte)) : null;
  out.keptBeforeLastConfirm = median(traces.map((t) => t.files.filter((f) => f.kept !== null && f.kept <= Math.max(...t.files.map((g) => g.confirmed ?? 0))).length));
  out.idbTransactions = median(traces.map((t) => t.transactions.length));
  out.strictTransactions = median(traces.map((t) => t.transactions.filter((x) => x.durability === "strict").length));
  return out;
}

async function main() {
  buildUppyPage();
  const server = await startServer({ extra: ["--multipart-threshold", "8GiB"] });
  const results = [];
  try {
    const dir = join(ROOT, "target/bench-uplink");
    for (const load of LOADS) {
      // Named by their size: a file of another run's size is never reused.
      const files = Array.from({ length: load.n }, (_, i) => join(dir, `${load.bytes}-${String(i).padStart(2, "0")}.bin`));
      for (const f of files) if (!existsSync(f) || statSync(f).size !== load.bytes) writeRandomFile(f, load.bytes);
      for (const profile of PROFILES) {
        const got = Object.fromEntries(VARIANTS.map((v) => [v, []]));
        const traces = Object.fromEntries(VARIANTS.map((v) => [v, []]));
        const rounds = profile.up !== null && profile.up < 100 ? SLOW_ROUNDS : ROUNDS;
        for (let r = 0; r < rounds; r++) {
          // Interleaved, in an order that turns each round.
          for (let i = 0; i < VARIANTS.length; i++) {
            const variant = VARIANTS[(i + r) % VARIANTS.length];
            const { ms, trace } = await run(server, variant, load, profile, files);
            got[variant].push(ms);
            traces[variant].push(trace);
            console.log(`${load.name}, ${profile.name}, round ${r + 1}: ${variant} ${Math.round(ms)} ms`);
          }
        }
        const row = { load: load.name, profile: profile.name, ms: Object.fromEntries(VARIANTS.map((v) => [v, median(got[v])])), all: got };
        row.breakdown = Object.fromEntries(VARIANTS.map((v) => [v, breakdown(traces[v])]));
        row.lastTrace = Object.fromEntries(VARIANTS.map((v) => [v, traces[v].at(-1)]));
        for (const v of VARIANTS) console.log(`${v}, median step times (ms):`, JSON.stringify(row.breakdown[v]));
        const bare = row.ms.bare;
        if (bare) console.log("ratios (bare ÷ variant):", JSON.stringify(Object.fromEntries(VARIANTS.map((v) => [v, +(bare / row.ms[v]).toFixed(3)]))));
        results.push(row);
      }
    }
  } finally {
    await server.stop();
  }
  const out = opt("--json", join(ROOT, "target/bench-uplink.json"));
  writeFileSync(out, JSON.stringify(results, null, 1));
  const md = opt("--md", join(ROOT, "target/bench-uplink.md"));
  writeFileSync(md, markdown(results));
  console.log(`written: ${out}, ${md}`);
}

const NAMES = { bare: "bare protocol", once: "upload-once", uppy: "Uppy + aws-s3", "uppy-gr": "Uppy + golden-retriever" };

/** The tables of docs/benchmarks.md, "A phone's uplink": times and ratios, then where upload-once's time went. */
function markdown(results) {
  const vs = VARIANTS.filter((v) => v !== "bare");
  const lines = [
    `| files | uplink, CPU | runs | bare protocol | ${vs.map((v) => NAMES[v] ?? v).join(" | ")} | target: upload-once ≥ 0.97× bare and ≥ Uppy + aws-s3 |`,
    `| --- | --- | --- | --- | ${vs.map(() => "---").join(" | ")} | --- |`,
  ];
  for (const r of results) {
    const cell = (v) => `${Math.round(r.ms[v])} ms (${(r.ms.bare / r.ms[v]).toFixed(3)})`;
    const once = r.ms.bare / r.ms.once;
    const met = once >= 0.97 && (!r.ms.uppy || r.ms.once <= r.ms.uppy);
    const target = r.profile.startsWith("loopback") ? "reported, not a target" : met ? "**met**" : "**not met**";
    lines.push(`| ${r.load} | ${r.profile} | ${r.all.bare.length} | ${Math.round(r.ms.bare)} ms | ${vs.map(cell).join(" | ")} | ${target} |`);
  }
  lines.push("", "Where each file's time went (medians over the files of every run; ms):", "",
    "| files | uplink, CPU | variant | pick → record durable | → hashed | authorize round trip | answer → first byte | first → last byte | last byte → confirm sent | confirm round trip | first file's first byte | tenth file's first byte |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  const n = (x) => (x === null || x === undefined || Number.isNaN(x) ? "—" : Math.round(x));
  for (const r of results) {
    for (const v of ["bare", "once"].filter((v) => r.breakdown[v])) {
      const b = r.breakdown[v];
      lines.push(`| ${r.load} | ${r.profile} | ${NAMES[v]} | ${n(b["pick→durable"])} | ${n(b["durable→hashed"])} | ${n(b["authSent→authorized"])} | ${n(b["authorized→firstByte"])} | ${n(b["firstByte→lastByte"])} | ${n(b["lastByte→confirmSent"])} | ${n(b["confirmSent→confirmed"])} | ${n(b.firstFileFirstByte)} | ${n(b.tenthFileFirstByte)} |`);
    }
  }
  return lines.join("\n") + "\n";
}

await main();
