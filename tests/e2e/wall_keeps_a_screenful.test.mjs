// The wall holds a screenful, not the event (issue 48): it opens with the
// newest N approved photos (`?last=N`, here `?keep=8`), never reading the
// event from its start; photos approved while it shows are added, and the
// oldest beyond N leave it, their images released (no `src` left). Its
// resync reads the newest N again, not everything.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, wallUrl, seedPhotos, until } from "./harness.mjs";
import { launch, wallIds } from "./pages.mjs";

const KEEP = 8;

let server, browser;
before(async () => { server = await startServer("wall-screenful"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** The ids of the wall's newest `n` items, as the server has them (sorted). */
async function newest(ev, n) {
  const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/wall?last=${n}`, { headers: { "x-guest-code": ev.guest_code } });
  assert.equal(res.status, 200);
  return (await res.json()).items.map((i) => i.id).sort();
}

/** Whether the wall shows the items newest first (by approval). */
const newestFirst = (wall) => wall.$$eval("[data-testid='wall-item']", (els) => els.every((e, i) => i === 0 || els[i - 1].dataset.approvedAt >= e.dataset.approvedAt));

/** Until the server's wall holds `n` items (an approved photo shows once its renditions are made). */
const wallHolds = (ev, n) => until(`${n} photos on the server's wall`, async () => {
  const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/wall?last=100`, { headers: { "x-guest-code": ev.guest_code } });
  return (await res.json()).items.length >= n;
}, 60_000, 200);

test("the wall keeps the newest N photos as more arrive, and releases the others", async () => {
  // No moderation: each photo is approved as it is saved.
  const ev = await createEvent(server, { moderation: "none" });
  await seedPhotos(server, ev, 20, { prefix: "before" });
  await wallHolds(ev, 20);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const wall = await context.newPage();
  const reads = [];
  wall.on("request", (r) => {
    const url = new URL(r.url());
    if (/\/wall(\/live)?$/.test(url.pathname)) reads.push(Object.fromEntries(url.searchParams));
  });
  await wall.goto(`${wallUrl(server, ev)}&keep=${KEEP}&resync_ms=1000`);
  await wall.waitForSelector("body[data-ready='1'][data-live='1']", { timeout: 20_000 });
  await until(`${KEEP} photos on the wall`, async () => (await wallIds(wall)).length === KEEP, 10_000);
  assert.deepEqual(await wallIds(wall), await newest(ev, KEEP), "the newest ones");
  assert.equal(reads[0].last, String(KEEP), "the first read asks for the newest N");
  assert.ok(await newestFirst(wall), "newest first on screen");

  // The oldest shown: its image is released once newer ones push it off.
  await wall.evaluate(() => { window.__oldest = document.querySelector("[data-testid='wall-item']:last-child img"); });
  await seedPhotos(server, ev, 12, { first: 1000, prefix: "live" });
  await wallHolds(ev, 32);
  const want = await newest(ev, KEEP);
  await until("the newest photos on the wall", async () => JSON.stringify(await wallIds(wall)) === JSON.stringify(want), 20_000, 100);
  assert.ok(await newestFirst(wall));
  assert.equal((await wall.$$("[data-testid='wall-item']")).length, KEEP);
  assert.equal(await wall.$$eval("img", (els) => els.length), KEEP, "no image beyond the N shown");
  assert.deepEqual(await wall.evaluate(() => ({ connected: window.__oldest.isConnected, src: window.__oldest.getAttribute("src") })), { connected: false, src: null }, "the image pushed off is released");

  // Resyncs (every second here) read the newest N again, never the event from its start.
  await wall.waitForTimeout(2_500);
  const resyncs = reads.filter((q) => q.last);
  assert.ok(resyncs.length >= 2, `resyncs: ${resyncs.length}`);
  assert.ok(reads.every((q) => q.last === String(KEEP) || q.after), `every read starts from the newest N or a cursor: ${JSON.stringify(reads)}`);
  assert.equal((await wall.$$("[data-testid='wall-item']")).length, KEEP);
  assert.match(await wall.textContent("#status"), new RegExp(`^${KEEP} `));
  await context.close();
});

test("a wall that polls (no live feed) keeps the newest N too, and skips to them after many approvals", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  await seedPhotos(server, ev, 12, { prefix: "first" });
  await wallHolds(ev, 12);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const wall = await context.newPage();
  const reads = [];
  wall.on("response", async (r) => {
    const url = new URL(r.url());
    if (!/\/wall(\/live)?$/.test(url.pathname)) return;
    const items = (await r.json().catch(() => ({ items: [] }))).items?.length ?? 0;
    reads.push({ path: url.pathname, ...Object.fromEntries(url.searchParams), items });
  });
  await wall.goto(`${wallUrl(server, ev)}&keep=5&live=0`);
  await wall.waitForSelector("body[data-ready='1']");
  await until("the newest 5", async () => JSON.stringify(await wallIds(wall)) === JSON.stringify(await newest(ev, 5)), 10_000);

  // Its next poll is held while 230 more are approved: it then finds more
  // than a page (100) of them, and reads the newest 5 instead of paging
  // through them all.
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await wall.route(/\/wall\?.*after=/, async (route) => { await held; await route.continue(); });
  await seedPhotos(server, ev, 230, { first: 2000, prefix: "many" });
  await until("all 242 on the server's wall", async () => {
    let after = "w0";
    let n = 0;
    for (;;) {
      const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/wall?after=${after}`, { headers: { "x-guest-code": ev.guest_code } });
      const page = await res.json();
      n += page.items.length;
      if (page.items.length < 100) return n === 242;
      after = page.next_cursor;
    }
  }, 60_000, 500);
  const since = reads.length;
  release();
  const want = await newest(ev, 5);
  await until("the newest 5 again", async () => JSON.stringify(await wallIds(wall)) === JSON.stringify(want), 20_000, 200);
  assert.ok(await newestFirst(wall));
  assert.equal(await wall.$$eval("img", (els) => els.length), 5);
  await wall.waitForTimeout(3_500);
  const later = reads.slice(since);
  const full = later.findIndex((q) => q.after && q.items === 100);
  assert.ok(full >= 0, `the held poll found a full page: ${JSON.stringify(later)}`);
  assert.equal(later[full + 1]?.last, "5", "then the wall read the newest 5");
  assert.ok(later.slice(full + 1).every((q) => q.items < 100), `no more full pages: ${JSON.stringify(later)}`);
  assert.ok(reads.every((q) => q.path.endsWith("/wall") && (q.last === "5" || q.after)), `polls only: ${JSON.stringify(reads)}`);
  await context.close();
});

test("a photo taken down while the live feed was away leaves the wall when the feed comes back", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  await seedPhotos(server, ev, 4, { prefix: "away" });
  await wallHolds(ev, 4);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const wall = await context.newPage();
  const reads = [];
  wall.on("request", (r) => {
    const url = new URL(r.url());
    if (/\/wall(\/live)?$/.test(url.pathname)) reads.push({ path: url.pathname, ...Object.fromEntries(url.searchParams) });
  });
  // No periodic resync here: only the feed's return may find what it missed.
  await wall.goto(`${wallUrl(server, ev)}&keep=${KEEP}&resync_ms=600000`);
  await wall.waitForSelector("body[data-live='1']", { timeout: 20_000 });
  await until("4 photos on the wall", async () => (await wallIds(wall)).length === 4, 10_000);
  const [down] = await newest(ev, 4);

  // The feed goes away (the server restarts) and stays away (its
  // reconnections fail) while the host takes a photo down: nobody tells
  // this wall.
  let away = true;
  await wall.route(/\/wall\/live/, (route) => (away ? route.abort() : route.continue()));
  await server.restart();
  await wall.waitForFunction(() => !document.body.dataset.live);
  const res = await fetch(`${server.base}/v1/media/${down}/moderation`, {
    method: "POST",
    headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
    body: JSON.stringify({ decision: "reject", reason: "taken down" }),
  });
  assert.equal(res.status, 200);
  await wall.waitForTimeout(1_000);
  const resyncsBefore = reads.filter((q) => q.last).length;

  away = false;
  await wall.waitForSelector("body[data-live='1']", { timeout: 20_000 });
  await until("the photo taken down to leave the wall", async () => !(await wallIds(wall)).includes(down), 10_000);
  assert.equal((await wallIds(wall)).length, 3);
  assert.ok(reads.filter((q) => q.last).length > resyncsBefore, "a read of the newest N found it gone");
  await context.close();
});
