// A festival's size (issue 48), the pages' side: one event seeded through
// the API with N tiny real photos (half approved by one bulk decision, half
// waiting), then, in headless Chromium with its CPU slowed 4× (CDP
// `Emulation.setCPUThrottlingRate`):
//
// - the host page (www/host.html, the host link with its token in the
//   fragment): navigation → `body[data-ready="1"]` (set once the first page
//   of the waiting list is read and shown), the DOM's element count and the
//   cards (`.media-item`) then, the bytes of its quiet refreshes (every 5 s
//   it asks `GET /v1/events/{slug}/media?since=…`; nothing changes while it
//   is measured), and the long tasks over the 20 s after ready;
// - the wall (www/wall.html, the guest code): navigation → ready (its first
//   read, `?last=N`, shown), its elements and `<img>`s, the long tasks over
//   20 s; then "an hour of arrivals, faster": new photos uploaded and
//   approved through the API as it runs (`--rate` a second for
//   `--arrivals-s` seconds), and the wall's items, images, elements and JS
//   heap (after a forced GC) before and after.
//
// Printed as JSON, one line per size, then a short summary against the
// targets: host ready ≤ 1 s and a quiet refresh ≤ 2 KB at every size, the
// host's and the wall's DOM bounded, no long task over 200 ms.
//
//   node bench/festival_pages.mjs [--sizes 1000,10000] [--window-s 20] [--rate 10] [--arrivals-s 60] [--cpu 4] [--profile]
//
// Environment: UPLOAD_ONCE_SERVER_BIN (the `fast` profile, as the other
// benchmarks), UPLOAD_ONCE_ROOT, UPLOAD_ONCE_CHROMIUM. The pages are www/ as
// it is (built by `cargo xtask`), the package pkg/.
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { startServer, json, ROOT, CHROMIUM, CHROMIUM_ARGS } from "./stack.mjs";
import { tinyPhoto } from "../tests/e2e/harness.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const SIZES = opt("--sizes", "1000,10000").split(",").map(Number);
const WINDOW_MS = Number(opt("--window-s", "20")) * 1000;
const RATE = Number(opt("--rate", "10"));
const ARRIVALS_MS = Number(opt("--arrivals-s", "60")) * 1000;
const CPU = Number(opt("--cpu", "4"));
/** `--profile`: a CPU profile of each page's load (to ready + 1 s) and of the wall's arrivals, their heaviest functions printed. */
const PROFILE = args.includes("--profile");
const CONCURRENCY = 32;
const PER_SESSION = 500;
const HOST_VIEWPORT = { width: 1280, height: 900 };
const WALL_VIEWPORT = { width: 1920, height: 1080 };
const TARGETS = { hostReadyMs: 1000, quietRefreshBytes: 2048, longTaskMs: 200, hostCards: 300 };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, d = 1) => (x == null ? null : Number(x.toFixed(d)));
const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

// ------------------------------------------------------------- seeding ----

const JSON_TYPE = { "content-type": "application/json" };

async function createFestival(server, n) {
  const slug = `festival-${n}-${Math.random().toString(36).slice(2, 8)}`;
  const ev = await json(await fetch(`${server.base}/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.admin}`, ...JSON_TYPE },
    body: JSON.stringify({ slug, title: "Festival", max_file_bytes: 1 << 20, allowed_types: ["image/*"], moderation: "required" }),
  }));
  return { ev, slug };
}

async function openSession(server, ev) {
  const s = await json(await fetch(`${server.base}/v1/events/${ev.event.slug}/sessions`, {
    method: "POST", headers: JSON_TYPE, body: JSON.stringify({ guest_code: ev.guest_code }),
  }));
  return s.session_token;
}

/** One guest's photo, numbered `n` (distinct per n): authorize, PUT, confirm. Resolves to its media id. */
async function uploadOne(server, ev, session, n) {
  const auth = { ...JSON_TYPE, authorization: `Bearer ${session}` };
  const bytes = tinyPhoto(n);
  const id = randomUUID();
  const name = `IMG_${String(n).padStart(6, "0")}.png`;
  const a = await json(await fetch(`${server.base}/v1/events/${ev.event.slug}/attempts`, {
    method: "POST", headers: auth, body: JSON.stringify({ id, filename: name, size: bytes.length, content_type: "image/png" }),
  }));
  const put = await fetch(a.upload.url, { method: "PUT", headers: a.upload.headers || {}, body: bytes });
  if (!put.ok) throw new Error(`PUT of ${name}: ${put.status}`);
  const c = await json(await fetch(`${server.base}/v1/attempts/${id}/confirm`, {
    method: "POST", headers: { ...auth, "idempotency-key": id }, body: JSON.stringify({ size: bytes.length, content_type: "image/png" }),
  }));
  return c.id;
}

/** Uploads photos numbered first..first+n, `CONCURRENCY` at a time, a guest session per `PER_SESSION`. */
async function seedPhotos(server, ev, n, first) {
  const sessions = [];
  for (let s = 0; s < Math.ceil(n / PER_SESSION); s++) sessions.push(await openSession(server, ev));
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, async () => {
    while (next < n) {
      const i = next++;
      await uploadOne(server, ev, sessions[Math.floor(i / PER_SESSION)], first + i);
    }
  }));
}

const hostHeaders = (ev) => ({ authorization: `Bearer ${ev.host_token}`, ...JSON_TYPE });
const hostList = async (server, ev, q) => json(await fetch(`${server.base}/v1/events/${ev.event.slug}/media?${q}`, { headers: hostHeaders(ev) }));

async function approve(server, ev, id) {
  await json(await fetch(`${server.base}/v1/media/${id}/moderation`, {
    method: "POST", headers: hostHeaders(ev), body: JSON.stringify({ decision: "approve" }),
  }));
}

/** Approves, in one bulk decision, every media waiting as of the change cursor `upto`; resolves once done. */
async function bulkApprove(server, ev, upto) {
  const begun = await json(await fetch(`${server.base}/v1/events/${ev.event.slug}/moderation/bulk`, {
    method: "POST", headers: hostHeaders(ev), body: JSON.stringify({ decision: "approve", upto }),
  }));
  for (;;) {
    const p = await json(await fetch(`${server.base}/v1/events/${ev.event.slug}/moderation/bulk/${begun.id}`, { headers: hostHeaders(ev) }));
    if (p.state === "done") return p;
    await sleep(100);
  }
}

/** Until no rendition job of the event is left (each one ending is a change the host's refresh would be told of), then until a `since` read finds nothing. */
async function settle(server, ev) {
  for (;;) {
    let cursor = null, pending = 0;
    do {
      const p = await hostList(server, ev, `filter=all&limit=500${cursor ? `&cursor=${cursor}` : ""}`);
      pending += p.media.filter((m) => m.preview === "pending").length;
      cursor = p.next_cursor;
    } while (cursor);
    if (pending === 0) break;
    await sleep(2000);
  }
  let cursor = (await hostList(server, ev, "limit=1")).changes;
  for (;;) {
    await sleep(500);
    const r = await hostList(server, ev, `since=${cursor}&limit=500`);
    if (r.media.length === 0 && !(r.gone || []).length) return (await hostList(server, ev, "limit=1")).counts;
    cursor = r.changes;
  }
}

async function seedFestival(server, n) {
  const { ev, slug } = await createFestival(server, n);
  const half = Math.floor(n / 2);
  const t0 = performance.now();
  await seedPhotos(server, ev, half, 0);
  // The host saw the first half (its change cursor), and approves it all.
  const seen = (await hostList(server, ev, "limit=1")).changes;
  const tb = performance.now();
  const bulk = await bulkApprove(server, ev, seen);
  const bulkSeconds = (performance.now() - tb) / 1000;
  await seedPhotos(server, ev, n - half, half);
  const seedSeconds = (performance.now() - t0) / 1000 - bulkSeconds;
  const ts = performance.now();
  const counts = await settle(server, ev);
  return { ev, slug, counts, bulkApproved: bulk.done, seedSeconds, bulkSeconds, settleSeconds: (performance.now() - ts) / 1000 };
}

// ------------------------------------------------------------ the pages ----

/**
 * Runs in the page before its own scripts: the long tasks (and long
 * animation frames, with the scripts they ran, over 50 ms), and when the
 * page said it was ready and showed its first card (ms since navigation).
 */
const INIT = () => {
  const b = (window.__bench = { longtasks: [], loafs: [], ready: null, readyPainted: null, firstItem: null });
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) b.longtasks.push({ start: e.startTime, duration: e.duration, name: e.name });
    }).observe({ type: "longtask", buffered: true });
  } catch {}
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) {
        b.loafs.push({
          start: e.startTime, duration: e.duration, blocking: e.blockingDuration,
          render: e.renderStart ? e.startTime + e.duration - e.renderStart : 0,
          style: e.styleAndLayoutStart ? e.startTime + e.duration - e.styleAndLayoutStart : 0,
          scripts: (e.scripts || []).map((s) => ({
            invoker: s.invoker, type: s.invokerType, source: `${(s.sourceURL || "").split("/").pop()}:${s.sourceFunctionName || ""}:${s.sourceCharPosition}`,
            duration: s.duration, forcedLayout: s.forcedStyleAndLayoutDuration,
          })),
        });
      }
    }).observe({ type: "long-animation-frame", buffered: true });
  } catch {}
  const mo = new MutationObserver(() => {
    if (b.ready === null && document.body && document.body.dataset.ready === "1") {
      b.ready = performance.now();
      // The next frame after it, and the task after that frame: what was
      // ready painted (its layout included, and what the page does on that frame).
      requestAnimationFrame(() => {
        const c = new MessageChannel();
        c.port1.onmessage = () => { b.readyPainted = performance.now(); };
        c.port2.postMessage(0);
      });
    }
    if (b.firstItem === null && document.querySelector(".media-item, .wall-item")) b.firstItem = performance.now();
    if (b.ready !== null && b.firstItem !== null) mo.disconnect();
  });
  mo.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-ready"] });
};

/** Long tasks that began in [from, to) (ms since navigation): count, total, longest, and the durations. */
function longTasks(all, from, to) {
  const xs = all.filter((t) => t.start >= from && t.start < to);
  return {
    count: xs.length,
    total_ms: Math.round(xs.reduce((s, t) => s + t.duration, 0)),
    longest_ms: Math.round(Math.max(0, ...xs.map((t) => t.duration))),
    over_200ms: xs.filter((t) => t.duration > 200).length,
    durations_ms: xs.map((t) => Math.round(t.duration)),
  };
}

/** The long animation frames of at least 100 ms in [from, to), with what ran in them. */
function longFrames(all, from, to) {
  return all.filter((f) => f.start >= from && f.start < to && f.duration >= 100).map((f) => ({
    at_ms: Math.round(f.start), ms: Math.round(f.duration), blocking_ms: Math.round(f.blocking),
    render_ms: Math.round(f.render), style_layout_ms: Math.round(f.style),
    scripts: f.scripts.filter((s) => s.duration >= 5).map((s) => `${s.type} ${s.invoker} (${s.source}) ${Math.round(s.duration)} ms${s.forcedLayout ? `, forced layout ${Math.round(s.forcedLayout)} ms` : ""}`),
  }));
}

const domCounts = (page) => page.evaluate(() => ({
  elements: document.getElementsByTagName("*").length,
  cards: document.querySelectorAll(".media-item").length,
  wall_items: document.querySelectorAll(".wall-item").length,
  imgs: document.getElementsByTagName("img").length,
  imgs_with_src: document.querySelectorAll("img[src]").length,
}));

/** The JS heap after a forced collection (CDP), and as the page reads it (`performance.memory`, precise). */
async function heap(cdp, page, gc = true) {
  if (gc) await cdp.send("HeapProfiler.collectGarbage");
  const usage = await cdp.send("Runtime.getHeapUsage");
  const used = await page.evaluate(() => performance.memory.usedJSHeapSize);
  return { used_mib: round(usage.usedSize / 2 ** 20, 2), total_mib: round(usage.totalSize / 2 ** 20, 2), page_used_mib: round(used / 2 ** 20, 2) };
}

/** A new page in its own context, its CPU slowed, its network watched, the init script in. */
async function newPage(browser, viewport) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on("pageerror", (e) => log("page error:", e.message));
  await page.addInitScript(INIT);
  const cdp = await context.newCDPSession(page);
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: CPU });
  await cdp.send("Network.enable");
  await cdp.send("HeapProfiler.enable");
  return { context, page, cdp };
}

/**
 * With `--profile`: starts sampling the page's renderer. The page goes to
 * the server's origin first (the page measured then loads in the same
 * renderer, which a profile needs: so its connection is warm, unlike the
 * runs without `--profile`).
 */
async function startProfile(cdp, page, origin) {
  if (!PROFILE) return;
  await page.goto(`${origin}/healthz`);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 250 });
  await cdp.send("Profiler.start");
}

/** The functions that took the most time in the profile (self time, ms), and the profile's total. */
async function stopProfile(cdp) {
  if (!PROFILE) return null;
  const { profile } = await cdp.send("Profiler.stop");
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  profile.samples.forEach((id, i) => {
    const f = byId.get(id).callFrame;
    const key = `${f.functionName || "(anonymous)"} ${f.url ? `${f.url.split("/").pop()}:${f.lineNumber + 1}` : ""}`.trim();
    self.set(key, (self.get(key) || 0) + (dt[i + 1] ?? 0) / 1000);
  });
  const top = [...self.entries()].filter(([k]) => k !== "(idle)" && k !== "(program)").sort((a, b) => b[1] - a[1]).slice(0, 15);
  return { total_ms: Math.round((profile.endTime - profile.startTime) / 1000), idle_ms: Math.round(self.get("(idle)") || 0), top_self_ms: top.map(([k, v]) => `${k}: ${Math.round(v)}`) };
}

/** Navigates and waits for `body[data-ready="1"]`; the times the page recorded (ms since navigation). */
async function openAndWait(page, url) {
  const t0 = performance.now();
  await page.goto(url, { waitUntil: "commit" });
  await page.waitForFunction(() => window.__bench && window.__bench.ready !== null, null, { timeout: 120_000, polling: 50 });
  const node_ms = performance.now() - t0;
  await page.waitForFunction(() => window.__bench.readyPainted !== null, null, { timeout: 30_000, polling: 50 });
  const b = await page.evaluate(() => ({ ready: window.__bench.ready, readyPainted: window.__bench.readyPainted, firstItem: window.__bench.firstItem }));
  return { ...b, node_ms };
}

/** Verifies the CPU throttling holds in the page after navigation: a fixed loop, timed. */
const spin = (page) => page.evaluate(() => {
  const t = performance.now();
  let x = 0;
  for (let i = 0; i < 2e7; i++) x = (x + i * 7) % 1000003;
  return { ms: performance.now() - t, x };
});

/** Records every response to a `since=` read of the host's list: wire bytes, body bytes, and whether anything had changed. */
function watchRefreshes(cdp) {
  const reqs = new Map();
  const extra = new Map();
  const done = [];
  const headerBytes = (headers) => Object.entries(headers).reduce((s, [k, v]) => s + k.length + String(v).length + 4, 0);
  const info = (id) => {
    if (!extra.has(id)) extra.set(id, {});
    return extra.get(id);
  };
  cdp.on("Network.requestWillBeSent", (e) => {
    if (/\/media\?.*since=/.test(e.request.url)) reqs.set(e.requestId, { url: e.request.url, sent: e.timestamp });
  });
  // Raw headers as sent and received (these events may come before or after the others).
  cdp.on("Network.requestWillBeSentExtraInfo", (e) => { info(e.requestId).requestHeaderBytes = headerBytes(e.headers); });
  cdp.on("Network.responseReceivedExtraInfo", (e) => {
    info(e.requestId).responseHeaderBytes = e.headersText ? e.headersText.length : headerBytes(e.headers) + 17;
  });
  cdp.on("Network.responseReceived", (e) => {
    const r = reqs.get(e.requestId);
    if (r) Object.assign(r, { status: e.response.status, encoding: e.response.headers["content-encoding"] || e.response.headers["Content-Encoding"] || null });
  });
  cdp.on("Network.loadingFinished", async (e) => {
    const r = reqs.get(e.requestId);
    if (!r) {
      extra.delete(e.requestId);
      return;
    }
    reqs.delete(e.requestId);
    r.transferBytes = e.encodedDataLength;
    r.ms = (e.timestamp - r.sent) * 1000;
    try {
      const body = await cdp.send("Network.getResponseBody", { requestId: e.requestId });
      const text = body.base64Encoded ? Buffer.from(body.body, "base64").toString() : body.body;
      r.bodyBytes = Buffer.byteLength(text);
      r.body = text.length <= 400 ? text : null;
      const parsed = JSON.parse(text);
      r.changed = (parsed.media || []).length + (parsed.gone || []).length;
    } catch (err) {
      r.bodyError = String(err);
    }
    Object.assign(r, extra.get(e.requestId) || {});
    extra.delete(e.requestId);
    r.at = Date.now();
    done.push(r);
  });
  return done;
}

async function measureHost(browser, server, ev) {
  const { context, page, cdp } = await newPage(browser, HOST_VIEWPORT);
  const refreshes = watchRefreshes(cdp);
  const url = `${server.base}/host.html?event=${ev.event.slug}#token=${encodeURIComponent(ev.host_token)}`;
  await startProfile(cdp, page, server.base);
  const opened = await openAndWait(page, url);
  if (PROFILE) await sleep(1000);
  const profile = await stopProfile(cdp);
  const atReady = await domCounts(page);
  const windowStart = Date.now();
  await sleep(WINDOW_MS);
  const atEnd = await domCounts(page);
  const b = await page.evaluate(() => window.__bench);
  const quiet = refreshes.filter((r) => r.at >= windowStart);
  const out = {
    ready_ms: Math.round(opened.ready),
    ready_painted_ms: Math.round(opened.readyPainted),
    first_card_ms: opened.firstItem === null ? null : Math.round(opened.firstItem),
    ready_ms_from_node: Math.round(opened.node_ms),
    elements_at_ready: atReady.elements,
    cards_at_ready: atReady.cards,
    imgs_at_ready: atReady.imgs,
    elements_after_window: atEnd.elements,
    cards_after_window: atEnd.cards,
    counts_shown: await page.evaluate(() => Object.fromEntries(["pending", "approved", "rejected", "all"].map((s) => [s, Number(document.getElementById(`count-${s}`).textContent)]))),
    quiet_refreshes: quiet.length,
    quiet_refresh_changed: quiet.reduce((s, r) => s + (r.changed || 0), 0),
    quiet_refresh_transfer_bytes_max: Math.max(0, ...quiet.map((r) => r.transferBytes)),
    quiet_refresh_body_bytes_max: Math.max(0, ...quiet.map((r) => r.bodyBytes || 0)),
    quiet_refresh_response_header_bytes: quiet[0]?.responseHeaderBytes ?? null,
    quiet_refresh_request_header_bytes: quiet[0]?.requestHeaderBytes ?? null,
    quiet_refresh_encoding: quiet[0]?.encoding ?? null,
    quiet_refresh_body: quiet[0]?.body ?? null,
    quiet_refresh_ms_max: round(Math.max(0, ...quiet.map((r) => r.ms))),
    long_tasks_load: longTasks(b.longtasks, 0, b.ready + 1),
    long_tasks_window: longTasks(b.longtasks, b.ready + 1, b.ready + WINDOW_MS),
    long_frames_load: longFrames(b.loafs, 0, b.ready + 1),
    long_frames_window: longFrames(b.loafs, b.ready + 1, b.ready + WINDOW_MS),
    heap_after_window: await heap(cdp, page),
    ...(profile ? { profile_load: profile } : {}),
  };
  await context.close();
  return out;
}

async function measureWall(browser, server, ev, n) {
  const { context, page, cdp } = await newPage(browser, WALL_VIEWPORT);
  const url = `${server.base}/wall.html?event=${ev.event.slug}&code=${encodeURIComponent(ev.guest_code)}`;
  await startProfile(cdp, page, server.base);
  const opened = await openAndWait(page, url);
  if (PROFILE) await sleep(1000);
  const profile = await stopProfile(cdp);
  const atReady = await domCounts(page);
  const keep = Number(await page.evaluate(() => document.body.dataset.keep));
  // Until every image shown has loaded (ms since navigation).
  const imagesLoaded = await page.waitForFunction(() => {
    const imgs = [...document.querySelectorAll(".wall-item img")];
    return imgs.length > 0 && imgs.every((i) => i.complete && i.naturalWidth > 0) && performance.now();
  }, null, { timeout: 60_000, polling: "raf" }).then((h) => h.jsonValue()).catch(() => null);
  await page.waitForSelector("body[data-live='1']", { timeout: 30_000 }).catch(() => log("the wall's live feed did not open"));
  const b0 = await page.evaluate(() => window.__bench);
  const windowEnd = b0.ready + WINDOW_MS;
  const left = windowEnd - (await page.evaluate(() => performance.now()));
  if (left > 0) await sleep(left);
  const b1 = await page.evaluate(() => window.__bench);
  const before = { ...(await domCounts(page)), heap: await heap(cdp, page) };
  const arrivalsStartPage = await page.evaluate(() => performance.now());
  if (PROFILE) await cdp.send("Profiler.start");

  // Arrivals: RATE a second, each uploaded then approved, while the wall runs.
  const sessions = [];
  for (let s = 0; s < 4; s++) sessions.push(await openSession(server, ev));
  const total = Math.round((RATE * ARRIVALS_MS) / 1000);
  let started = 0, approved = 0, failed = 0, inFlight = 0, maxInFlight = 0;
  const samples = [];
  const t0 = performance.now();
  const flights = [];
  const sampler = setInterval(async () => {
    try { samples.push({ s: Math.round((performance.now() - t0) / 1000), approved, ...(await domCounts(page)), heap_mib: round(await page.evaluate(() => performance.memory.usedJSHeapSize) / 2 ** 20, 2) }); } catch {}
  }, 10_000);
  while (started < total) {
    const due = t0 + (started * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const k = started++;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    flights.push((async () => {
      try {
        const id = await uploadOne(server, ev, sessions[k % sessions.length], 1_000_000 + n + k);
        await approve(server, ev, id);
        approved++;
      } catch (err) {
        failed++;
        if (failed <= 3) log("arrival failed:", err.message);
      } finally {
        inFlight--;
      }
    })());
  }
  await Promise.all(flights);
  const arrivalSeconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const profileArrivals = await stopProfile(cdp);
  // Until the server's wall holds the last arrivals' renditions, and the page shows what the server's newest are.
  const newest = async () => (await json(await fetch(`${server.base}/v1/events/${ev.event.slug}/wall?last=${keep}`, { headers: { "x-guest-code": ev.guest_code } }))).items.map((i) => i.id).sort();
  let matches = false;
  for (let i = 0; i < 60 && !matches; i++) {
    const want = await newest();
    const have = await page.$$eval(".wall-item", (els) => els.map((e) => e.dataset.id).sort());
    matches = JSON.stringify(want) === JSON.stringify(have);
    if (!matches) await sleep(500);
  }
  const arrivalsEndPage = await page.evaluate(() => performance.now());
  const after = { ...(await domCounts(page)), heap: await heap(cdp, page) };
  const b2 = await page.evaluate(() => window.__bench);
  const out = {
    keep,
    ready_ms: Math.round(opened.ready),
    ready_painted_ms: Math.round(opened.readyPainted),
    first_item_ms: opened.firstItem === null ? null : Math.round(opened.firstItem),
    images_loaded_ms: imagesLoaded === null ? null : Math.round(imagesLoaded),
    elements_at_ready: atReady.elements,
    items_at_ready: atReady.wall_items,
    imgs_at_ready: atReady.imgs,
    long_tasks_load: longTasks(b1.longtasks, 0, b1.ready + 1),
    long_tasks_window: longTasks(b1.longtasks, b1.ready + 1, windowEnd),
    long_frames_load: longFrames(b1.loafs, 0, b1.ready + 1),
    long_frames_window: longFrames(b1.loafs, b1.ready + 1, windowEnd),
    arrivals: { asked: total, approved, failed, seconds: round(arrivalSeconds), per_second: round(approved / arrivalSeconds), max_in_flight: maxInFlight },
    before_arrivals: { elements: before.elements, items: before.wall_items, imgs: before.imgs, imgs_with_src: before.imgs_with_src, heap: before.heap },
    after_arrivals: { elements: after.elements, items: after.wall_items, imgs: after.imgs, imgs_with_src: after.imgs_with_src, heap: after.heap },
    shows_the_newest_after_arrivals: matches,
    samples_during_arrivals: samples,
    long_tasks_arrivals: longTasks(b2.longtasks, arrivalsStartPage, arrivalsEndPage),
    long_frames_arrivals: longFrames(b2.loafs, arrivalsStartPage, arrivalsEndPage).sort((a, b) => b.ms - a.ms).slice(0, 8),
    ...(profile ? { profile_load: profile, profile_arrivals: profileArrivals } : {}),
  };
  await context.close();
  return out;
}

// ---------------------------------------------------------------- main ----

// The caps per client address are for guests on the internet; the seeding
// here is one address standing for thousands of phones.
for (const name of ["SESSIONS", "AUTHORIZE", "CONFIRM", "STATUS", "WALL"]) process.env[`UPLOAD_ONCE_RATE_${name}`] = "10000000/min";

const browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, "--enable-precise-memory-info"] });
const results = [];
let throttleRatio = null;
try {
  // The throttling holds after navigation (the rate applies to the page's renderer).
  {
    const server = await startServer({ www: join(ROOT, "www") });
    try {
      const plain = await (async () => { const c = await browser.newContext(); const p = await c.newPage(); await p.goto(`${server.base}/wall.html`); const r = await spin(p); await c.close(); return r.ms; })();
      const { context, page } = await newPage(browser, WALL_VIEWPORT);
      await page.goto(`${server.base}/wall.html`);
      const slowed = (await spin(page)).ms;
      await context.close();
      log(`a fixed loop: ${Math.round(plain)} ms unthrottled, ${Math.round(slowed)} ms at the ${CPU}× setting (ratio ${(slowed / plain).toFixed(1)})`);
      throttleRatio = slowed / plain;
    } finally {
      await server.stop();
    }
  }
  for (const n of SIZES) {
    const server = await startServer({ www: join(ROOT, "www") });
    try {
      const load0 = loadavg();
      log(`seeding ${n} photos…`);
      const seeded = await seedFestival(server, n);
      log(`seeded in ${seeded.seedSeconds.toFixed(1)} s (bulk ${seeded.bulkSeconds.toFixed(1)} s, renditions settled ${seeded.settleSeconds.toFixed(1)} s later): ${JSON.stringify(seeded.counts)}`);
      log("host page…");
      const host = await measureHost(browser, server, seeded.ev);
      log(`host ready in ${host.ready_ms} ms; wall…`);
      const wall = await measureWall(browser, server, seeded.ev, n);
      const allLong = [host.long_tasks_load, host.long_tasks_window, wall.long_tasks_load, wall.long_tasks_window, wall.long_tasks_arrivals];
      const out = {
        media: n,
        cpu_throttling: CPU,
        throttle_ratio_measured: round(throttleRatio, 2),
        seed_seconds: round(seeded.seedSeconds),
        bulk_approve_seconds: round(seeded.bulkSeconds),
        renditions_settled_seconds: round(seeded.settleSeconds),
        counts: seeded.counts,
        loadavg_before: load0.map((x) => round(x, 2)),
        loadavg_after: loadavg().map((x) => round(x, 2)),
        host,
        wall,
        targets: {
          host_ready_le_1s: host.ready_ms <= TARGETS.hostReadyMs,
          quiet_refresh_le_2kb: host.quiet_refreshes > 0 && host.quiet_refresh_transfer_bytes_max <= TARGETS.quietRefreshBytes,
          host_dom_bounded: host.cards_at_ready <= TARGETS.hostCards && host.cards_after_window <= TARGETS.hostCards,
          wall_dom_bounded: wall.after_arrivals.items <= wall.keep && wall.after_arrivals.elements <= wall.before_arrivals.elements + 5,
          wall_heap_flat: wall.after_arrivals.heap.used_mib <= wall.before_arrivals.heap.used_mib * 1.25 + 1,
          no_long_task_over_200ms: allLong.every((t) => t.over_200ms === 0),
        },
      };
      results.push(out);
      console.log(JSON.stringify(out));
    } finally {
      await server.stop();
    }
  }
} finally {
  await browser.close();
}

// A short summary.
const yes = (b) => (b ? "met" : "MISSED");
for (const r of results) {
  const h = r.host, w = r.wall, lt = (t) => `${t.count} (${t.total_ms} ms, longest ${t.longest_ms})`;
  console.log([
    `\n${r.media} media (${r.counts.pending} waiting, ${r.counts.approved} approved), CPU ${r.cpu_throttling}×:`,
    `  host: ready ${h.ready_ms} ms (painted ${h.ready_painted_ms} ms) [${yes(r.targets.host_ready_le_1s)} ≤ 1 s], ${h.elements_at_ready} elements, ${h.cards_at_ready} cards [${yes(r.targets.host_dom_bounded)}],`,
    `        quiet refresh ${h.quiet_refresh_transfer_bytes_max} B on the wire (body ${h.quiet_refresh_body_bytes_max} B, ${h.quiet_refreshes} refreshes) [${yes(r.targets.quiet_refresh_le_2kb)} ≤ 2 KB],`,
    `        long tasks: load ${lt(h.long_tasks_load)}, ${WINDOW_MS / 1000} s after ready ${lt(h.long_tasks_window)}`,
    `  wall: ready ${w.ready_ms} ms (painted ${w.ready_painted_ms} ms), images in ${w.images_loaded_ms} ms, ${w.elements_at_ready} elements, ${w.imgs_at_ready} imgs (keeps ${w.keep});`,
    `        long tasks: load ${lt(w.long_tasks_load)}, ${WINDOW_MS / 1000} s after ready ${lt(w.long_tasks_window)}, arrivals ${lt(w.long_tasks_arrivals)}`,
    `        ${w.arrivals.approved} arrivals in ${w.arrivals.seconds} s: items ${w.before_arrivals.items} → ${w.after_arrivals.items}, imgs ${w.before_arrivals.imgs} → ${w.after_arrivals.imgs}, elements ${w.before_arrivals.elements} → ${w.after_arrivals.elements} [${yes(r.targets.wall_dom_bounded)}], heap ${w.before_arrivals.heap.used_mib} → ${w.after_arrivals.heap.used_mib} MiB [${yes(r.targets.wall_heap_flat)}]`,
    `  no long task over 200 ms: ${yes(r.targets.no_long_task_over_200ms)}; load average ${r.loadavg_before.join(" ")} → ${r.loadavg_after.join(" ")}`,
  ].join("\n"));
}
