// The chaos soak: N uploads from headless Chromium through the fault proxy,
// with random faults on every route and random page reloads; then a checker
// compares what the guest picked with the server's database and storage.
//
//   node tests/faults/soak.mjs [--uploads 300] [--minutes 20] [--seed 1] [--fault-rate 0.15]
//                              [--reload-every 3000] [--uplink 500000] [--cpu-hog 2] [--large 3]
//                              [--guests 1] [--parallel 3] [--shared 0] [--cluster [--rolling]]
//
// `--cluster` runs it on the cluster of tests/cluster/cluster.mjs (two
// instances behind nginx, PostgreSQL, moto), with the fault proxy in front
// of nginx, and restarts each instance during the run: one SIGKILL, one
// SIGTERM (`cargo xtask soak --cluster` starts what that needs). The
// cluster layer's test runs the same soak (`soak()`, exported).
//
// The uplink is throttled (bytes/s, Chromium's network emulation) so that
// reloads land in the middle of transfers. Among the faults, clients hang up
// on authorize and confirm while the server is at work; `--cpu-hog N` keeps
// N processes spinning beside the run, so the server works on a busy
// machine, as it does when an event's guests all reload at once.
//
// `--large N` makes N of the uploads 11 MiB videos, which go up in parts
// (the server runs with an 8 MiB multipart threshold and 5 MiB parts), so
// the faults and reloads land between parts too.
//
// Prints one line and exits non-zero if anything was lost, duplicated or
// orphaned:
//   uploads N, faults F (hang-ups H), reloads R, confirmed C, lost 0, duplicates 0, orphans 0
import { spawn } from "node:child_process";
import { readdirSync, existsSync, statSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { createEvent, hostMedia, photo } from "../e2e/harness.mjs";
import { launch, openGuest } from "../e2e/pages.mjs";
import { startStack } from "./stack.mjs";

const LARGE_BYTES = 11 * 1024 * 1024;
const BATCH = 10;
/** The server flags of a soak: its large files go up in parts. */
export const SOAK_SERVER_ARGS = ["--multipart-threshold", "8MiB", "--part-size", "5MiB"];

/** Random faults on every route the browser uses. */
function faultRules(rate) {
  const routes = [
    { method: "POST", path: "/v1/events/*/attempts" },
    { method: "PUT", path: "/storage/*" },
    { method: "POST", path: "/v1/attempts/*/confirm" },
    { method: "POST", path: "/v1/attempts/status" },
    { method: "POST", path: "/v1/attempts/*/renew" },
  ];
  const actions = [
    { kind: "drop_before" },
    { kind: "drop_after" },
    { kind: "status", status: 503 },
    { kind: "status", status: 429, retry_after: "1" },
    { kind: "delay", ms: 1500 },
  ];
  // Route-specific faults: a body cut mid-PUT; a client that hangs up while
  // the server authorizes or confirms (inside its transaction, or just after).
  const extra = (route) => {
    if (route.method === "PUT") return [{ kind: "cut_body", after_bytes: 20_000 }];
    if (route.path.endsWith("/attempts") || route.path.endsWith("/confirm")) return [{ kind: "hang_up", after_ms: 0, jitter_ms: 60 }];
    return [];
  };
  const rules = [];
  for (const route of routes) {
    const all = [...actions, ...extra(route)];
    for (const action of all) rules.push({ ...route, probability: rate / all.length, action });
  }
  return rules;
}

/** An 11 MiB "video" whose bytes differ from part to part and file to file. */
function largeVideo(seed) {
  const bytes = Buffer.alloc(LARGE_BYTES);
  for (let i = 0; i < LARGE_BYTES; i += 4096) bytes.fill((seed * 31 + i / 4096) % 251, i, Math.min(i + 4096, LARGE_BYTES));
  return bytes;
}

// The embedded store's objects, by key: a file, or a directory holding an
// object's parts (a multipart upload's directory, `upload.json` and all,
// filed as the object at confirm).
function objectFiles(dataDir) {
  const root = join(dataDir, "objects");
  const out = [];
  const walk = (d) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith(".")) continue;
      const p = join(d, e.name);
      if (e.isDirectory() && !existsSync(join(p, "upload.json"))) walk(p);
      else if (!e.name.endsWith(".meta")) out.push(p.slice(root.length + 1));
    }
  };
  walk(root);
  return out;
}

// An object's size: its file's, or for an object in parts the size its
// metadata records (the sum of its parts, checked by the store when filed).
function objectSize(dataDir, key) {
  const path = join(dataDir, "objects", key);
  if (!statSync(path).isDirectory()) return statSync(path).size;
  const meta = JSON.parse(readFileSync(`${path}.meta`, "utf8"));
  const parts = (meta.parts ?? []).reduce((sum, [number, size]) => sum + (statSync(join(path, String(number))).size === size ? size : NaN), 0);
  return parts === meta.size ? meta.size : NaN;
}

/** What the embedded store holds: its objects (key → size) and the parts of uploads still open. */
function localStorage(dataDir) {
  const objects = new Map(objectFiles(dataDir).map((k) => [k, objectSize(dataDir, k)]));
  // Parts of large files become their object at confirm, and no upload is
  // left open.
  const partsLeft = [];
  const walkParts = (d) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walkParts(join(d, e.name));
      else partsLeft.push(join(d, e.name));
    }
  };
  walkParts(join(dataDir, "objects", ".parts"));
  return { objects, partsLeft };
}

/**
 * The soak on `stack`: `{ api: {base, admin}, proxy, guestUrl(ev),
 * storage() → {objects: Map key → size, partsLeft: []}, ready() → bool }`.
 * `during({ list, confirmed })`, if given, runs beside it from the first
 * pick (the cluster's instance restarts): `list()` is every open guest
 * page's attempts, `confirmed()` how many attempts have been seen confirmed
 * so far (it never goes down when a guest that is done leaves). It is
 * awaited before the checker. Returns `{ ok, line }`; the details go to
 * stderr.
 *
 * `guests` guests (each a browser context of its own: its own IndexedDB and
 * session) share the uploads, `parallel` of them at once; a guest whose
 * files are all confirmed leaves, and the next one comes. `shared` photos
 * are picked by a second guest as well (the same bytes under that guest's
 * own name), so the event's deduplication meets them.
 */
export async function soak(stack, {
  uploads: UPLOADS = 300, minutes: MINUTES = 20, seed: SEED = 1, faultRate: RATE = 0.15, reloadEvery: RELOAD_EVERY = 3000,
  uplink: UPLINK = 500_000, cpuHog: CPU_HOG = 2, large: LARGE = 3, guests: GUESTS = 1, parallel: PARALLEL = Math.min(GUESTS, 3),
  shared: SHARED = 0,
} = {}, { during } = {}) {
  let state = SEED * 2654435761 >>> 0 || 1;
  const rand = () => { state ^= state << 13; state ^= state >>> 17; state ^= state << 5; return (state >>> 0) / 2 ** 32; };
  const started = Date.now();
  const deadline = started + MINUTES * 60_000;
  const hogs = Array.from({ length: CPU_HOG }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  const browser = await launch();
  let result = { ok: false, line: "did not finish" };
  let beside = null;
  const count = { reloads: 0, retriesPressed: 0, repicks: 0, failedWith: {}, confirmedByGone: 0 };
  // The guests whose page is open, and what each saw of its attempts at the end.
  const open = new Set();
  const seen = new Map();
  const list = async () => (await Promise.all([...open].map((g) => g.list()))).flat();
  const confirmed = async () => count.confirmedByGone + (await list()).filter((a) => a.confirmation === "confirmed").length;
  let progress = null;
  try {
    await stack.proxy.seed(SEED);
    const ev = await createEvent(stack.api, { moderation: "none" });

    // Who picks what: the uploads are dealt out in order, a block to each
    // guest; the large ones are spread over the run; a shared photo goes to
    // a second guest too.
    const guestOf = (k) => Math.floor((k * GUESTS) / UPLOADS);
    const every = Math.max(1, Math.floor(UPLOADS / Math.max(1, LARGE)));
    const plans = Array.from({ length: GUESTS }, () => []);
    for (let k = 0; k < UPLOADS; k++) {
      const large = LARGE > 0 && k % every === 0 && k / every < LARGE;
      plans[guestOf(k)].push(large
        ? { name: `soak-${SEED}-${k}.mp4`, mimeType: "video/mp4", make: () => largeVideo(k + 1) }
        : { name: `soak-${SEED}-${k}.png`, mimeType: "image/png", size: 20_000 + Math.floor(rand() * 60_000), make() { return photo(k + 1, this.size); } });
    }
    for (let j = 0; j < SHARED && GUESTS > 1; j++) {
      const k = Math.floor(rand() * UPLOADS);
      const original = plans[guestOf(k)].find((f) => f.name === `soak-${SEED}-${k}.png`);
      if (!original) continue;
      const g = (guestOf(k) + 1 + Math.floor(rand() * (GUESTS - 1))) % GUESTS;
      const name = `soak-${SEED}-${k}-shared-by-${g}.png`;
      if (!plans[g].some((f) => f.name === name)) plans[g].push({ ...original, name });
    }
    const picks = plans.reduce((n, p) => n + p.length, 0);
    await stack.proxy.rules(...faultRules(RATE));
    beside = during?.({ list, confirmed });
    progress = setInterval(async () => {
      console.error(`soak: ${Math.round((Date.now() - started) / 1000)} s, ${await confirmed()} of ${picks} confirmed, ${open.size} guests open, ${count.reloads} reloads`);
    }, 60_000);

    // One guest: picks its files in batches (a batch counts once every file
    // has its durable record), reloads now and then, retries what failed for
    // good like a guest who keeps pressing Retry, picks again what was not
    // kept, and leaves once everything it picked is confirmed.
    const runGuest = async (plan) => {
      const context = await browser.newContext();
      const page = await openGuest(context, stack.guestUrl(ev));
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.enable");
      await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 5, downloadThroughput: -1, uploadThroughput: UPLINK });
      const bytesOf = new Map();
      const guest = {
        page, cdp, context, bytesOf,
        list: () => page.evaluate(() => window.uploader.list()).catch(() => []),
      };
      open.add(guest);
      const ready = () => page.waitForSelector("body[data-ready='1']", { timeout: 60_000 });
      let lastReload = Date.now();
      guest.maybeReload = async () => {
        if (Date.now() - lastReload < RELOAD_EVERY * (0.5 + rand())) return;
        lastReload = Date.now();
        count.reloads++;
        await page.reload().catch(() => {});
        await ready();
      };
      const picked = [];
      while (picked.length < plan.length) {
        if (Date.now() > deadline) throw new Error("out of time while picking");
        const files = plan.slice(picked.length, picked.length + BATCH).map((f) => ({ name: f.name, mimeType: f.mimeType, buffer: f.make() }));
        for (const f of files) bytesOf.set(f.name, f.buffer);
        await page.setInputFiles("[data-testid='file-input']", files);
        const names = new Set(files.map((f) => f.name));
        for (;;) {
          const have = new Set((await guest.list()).map((a) => a.fileName));
          if ([...names].every((x) => have.has(x))) break;
          await sleep(50);
        }
        picked.push(...files.map((f) => f.name));
        await guest.maybeReload();
      }
      for (;;) {
        if (Date.now() > deadline) return; // left open: the settling below finishes it
        const current = (await guest.list()).filter((a) => !a.replacedBy);
        if (current.length >= plan.length && current.every((a) => a.confirmation === "confirmed")) break;
        await pressRetry(guest, current);
        await repick(guest, current);
        await sleep(500);
        await guest.maybeReload();
      }
      await leave(guest);
    };
    const pressRetry = async (guest, attempts) => {
      for (const a of attempts) {
        if (a.terminal && (a.transfer === "failed" || a.confirmation === "failed")) {
          count.retriesPressed++;
          count.failedWith[a.error?.code] = (count.failedWith[a.error?.code] ?? 0) + 1;
          await guest.page.evaluate((id) => window.uploader.retry(id), a.id).catch(() => {});
        }
      }
    };
    // A guest asked to pick a photo again (its bytes were not kept before a
    // reload) picks the same file: same name, size and modification time.
    const repick = async (guest, attempts) => {
      for (const a of attempts) {
        if (a.transfer !== "needs_file" || !guest.bytesOf.has(a.fileName)) continue;
        count.repicks++;
        await guest.page.evaluate(async ({ name, type, lastModified, b64 }) => {
          const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
          await window.uploader.add([new File([bytes], name, { type, lastModified })]);
        }, { name: a.fileName, type: a.type, lastModified: a.lastModified, b64: guest.bytesOf.get(a.fileName).toString("base64") }).catch(() => {});
      }
    };
    // What the guest's page says of each of its files, kept for the checker.
    const leave = async (guest) => {
      const attempts = (await guest.list()).filter((a) => !a.replacedBy);
      for (const a of attempts) seen.set(a.fileName, a);
      count.confirmedByGone += attempts.filter((a) => a.confirmation === "confirmed").length;
      open.delete(guest);
      await guest.context.close().catch(() => {});
    };

    let next = 0;
    await Promise.all(Array.from({ length: Math.max(1, PARALLEL) }, async () => {
      while (next < GUESTS) await runGuest(plans[next++]);
    }));

    // Quiet network, everything settles; then the checker.
    const besideReport = await beside;
    const faultLog = (await stack.proxy.log()).faults;
    const faults = faultLog.length;
    const hangUps = faultLog.filter((f) => f.action.kind === "hang_up").length;
    await stack.proxy.reset();
    for (const guest of open) await guest.cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    const settleBy = Date.now() + 120_000;
    while (open.size > 0 && Date.now() < settleBy) {
      for (const guest of [...open]) {
        const attempts = await guest.list();
        await pressRetry(guest, attempts);
        await repick(guest, attempts);
        if (attempts.filter((a) => !a.replacedBy).every((a) => a.confirmation === "confirmed")) await leave(guest);
      }
      await sleep(500);
    }
    for (const guest of [...open]) await leave(guest);

    const media = await hostMedia(stack.api, ev);
    const perFile = new Map();
    for (const m of media) perFile.set(m.filename, (perFile.get(m.filename) ?? 0) + 1);
    const names = plans.flat().map((f) => f.name);
    // A picked file is stored when it has its media, or when its attempt was
    // confirmed as a duplicate of what another guest stored.
    const deduplicated = names.filter((name) => !perFile.has(name) && seen.get(name)?.confirmation === "confirmed" && seen.get(name)?.media?.duplicate);
    const lost = names.filter((name) => !perFile.has(name)).length - deduplicated.length;
    const duplicates = [...perFile.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
    const { objects, partsLeft: leftParts } = await stack.storage();
    // A media's object, and the renditions the server makes of it.
    const referenced = new Set(media.flatMap((m) => [m.object_key, `${m.object_key}-display`, `${m.object_key}-thumb`]));
    const unreferenced = [...objects.keys()].filter((k) => !referenced.has(k));
    const missing = media.filter((m) => objects.get(m.object_key) !== m.size);
    const orphans = unreferenced.length + missing.length + leftParts.length;
    const serverReady = await stack.ready();
    const large = names.filter((name) => name.endsWith(".mp4")).length;
    const sharedPicks = names.filter((name) => name.includes("-shared-by-")).length;
    const line = `uploads ${names.length} (in parts ${large}${GUESTS > 1 ? `, guests ${GUESTS}, picked by a second guest ${sharedPicks}, deduplicated ${deduplicated.length}` : ""}), faults ${faults} (hang-ups ${hangUps}), reloads ${count.reloads}, confirmed ${media.length + deduplicated.length}, lost ${lost}, duplicates ${duplicates}, orphans ${orphans}, parts left ${leftParts.length}${serverReady ? "" : ", server not ready"}`;
    result = { ok: !(lost || duplicates || orphans || !serverReady), line, confirmed: media.length + deduplicated.length, lost, duplicates, orphans, partsLeft: leftParts.length, during: besideReport };
    console.error(`(seed ${SEED}, fault rate ${RATE}, uplink ${UPLINK} B/s, reload every ~${RELOAD_EVERY} ms, cpu hogs ${CPU_HOG}, retries pressed ${count.retriesPressed}, files picked again ${count.repicks}, failures retried by hand ${JSON.stringify(count.failedWith)}, ${Math.round((Date.now() - started) / 1000)} s)`);
    if (lost || duplicates || orphans || !serverReady) {
      if (unreferenced.length) console.error("objects without a media row:", unreferenced.slice(0, 10));
      if (missing.length) console.error("media rows without their object:", missing.slice(0, 10).map((m) => m.object_key));
      if (leftParts.length) console.error("parts left behind:", leftParts.slice(0, 10));
      const lostNames = names.filter((name) => !perFile.has(name) && !deduplicated.includes(name));
      if (lostNames.length) console.error("lost:", lostNames.slice(0, 10), lostNames.slice(0, 5).map((name) => seen.get(name)));
    }
  } finally {
    clearInterval(progress);
    for (const hog of hogs) hog.kill("SIGKILL");
    await beside?.catch(() => {});
    await browser.close();
  }
  return result;
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (name, fallback) => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : fallback);
  const options = {
    uploads: opt("uploads", 300), minutes: opt("minutes", 20), seed: opt("seed", 1), faultRate: opt("fault-rate", 0.15),
    reloadEvery: opt("reload-every", 3000), uplink: opt("uplink", 500_000), cpuHog: opt("cpu-hog", 2), large: opt("large", 3),
    guests: opt("guests", 1), shared: opt("shared", 0),
  };
  if (argv.includes("--parallel")) options.parallel = opt("parallel", 3);
  let stack;
  let during;
  let watch = null;
  if (argv.includes("--cluster")) {
    const { startCluster, restartEachInstance, watchInstances } = await import("../cluster/cluster.mjs");
    // Guest sessions lapse during a long run (`--session-ttl`, in minutes).
    const sessionTtl = opt("session-ttl", 0);
    const serverArgs = [...SOAK_SERVER_ARGS, ...(sessionTtl ? ["--session-ttl", `${sessionTtl}m`] : [])];
    stack = await startCluster(`soak-${options.seed}`, { serverArgs, faults: true });
    // A long run (`--rolling`) also restarts A gracefully after B: a
    // SIGKILL, and a rolling restart of both.
    during = restartEachInstance(stack, { within: options.minutes * 60_000, rolling: argv.includes("--rolling"), afterConfirmed: argv.includes("--rolling") ? Math.floor(options.uploads / 3) : 0 });
    watch = watchInstances(stack);
  } else {
    const local = await startStack(`soak-${options.seed}`, { serverArgs: SOAK_SERVER_ARGS });
    stack = {
      ...local, api: local.server,
      storage: () => localStorage(local.server.dataDir),
      ready: async () => (await fetch(`${local.server.base}/readyz`)).status === 200,
    };
  }
  try {
    const started = Date.now();
    const { ok, line, confirmed, during: report } = await soak(stack, options, { during });
    console.log(line);
    if (report) console.log(JSON.stringify(report));
    let twice = 0;
    if (watch) {
      // Every media's rendition job ends (done, or a placeholder for what
      // is not a photo) before the work is counted.
      const open = () => Number(stack.psql("SELECT count(*) FROM rendition_jobs WHERE state IN ('queued', 'running')"));
      const by = Date.now() + 120_000;
      while (open() > 0 && Date.now() < by) await sleep(1_000);
      const jobs = Number(stack.psql("SELECT count(*) FROM rendition_jobs"));
      const { jobsEnded, perInstance } = await watch.stop();
      twice = Math.max(0, jobsEnded - jobs);
      console.log(`rendition jobs ${jobs} for ${confirmed} media, still open ${open()}, ended by the instances (at least) ${jobsEnded}: jobs done twice ${twice}`);
      for (const i of perInstance) {
        console.log(`instance ${i.label}: since its last start RSS ${i.since.rssKiB} KiB, ${i.since.fds} descriptors; peak ${i.peakRssKiB} KiB, ${i.peakFds}; at the end ${i.end.rssKiB} KiB, ${i.end.fds}`);
      }
    }
    console.log(`wall time ${Math.round((Date.now() - started) / 1000)} s`);
    if (!ok || twice) process.exitCode = 1;
  } finally {
    await stack.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) main().catch((e) => { console.error(e); process.exit(1); });
