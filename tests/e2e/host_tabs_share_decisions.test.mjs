// Two host tabs of one event in one browser: an approval in one shows in the
// other at once, and a rejection made there shows back in the first. Both
// tabs ask what changed only every 10 minutes here (`refresh_ms`), so what
// carries the decision is the tabs' channel (BroadcastChannel), not polling:
// neither tab asks what changed (`since=`), each reads only the first page
// of the lists it shows (waiting when it opens, then all).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, hostUrl, photos, until } from "./harness.mjs";
import { launch, saveInNewContext } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-tabs"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** The moderation state each item shows in a tab, by id ("all" filter). */
const states = (page) => page.$$eval("#grid .media-item", (els) => Object.fromEntries(els.map((e) => [e.dataset.id, e.dataset.moderation])));

test("a decision in one host tab shows in the other without a re-read", async () => {
  const ev = await createEvent(server);
  const { context, page: guest } = await saveInNewContext(browser, server, ev, photos(2, 30_000), { viewport: { width: 1280, height: 900 } });

  const url = hostUrl(server, ev, "&refresh_ms=600000");
  const [a, b] = [await context.newPage(), await context.newPage()];
  const reads = { a: [], b: [] };
  const read = (r) => (r.method() === "GET" && new URL(r.url()).pathname.endsWith("/media") ? new URL(r.url()).searchParams : null);
  a.on("request", (r) => { const q = read(r); if (q) reads.a.push(q.has("since") ? "since" : q.get("filter")); });
  b.on("request", (r) => { const q = read(r); if (q) reads.b.push(q.has("since") ? "since" : q.get("filter")); });
  for (const page of [a, b]) {
    await page.goto(url);
    await until("2 waiting items", async () => (await page.$$("[data-testid='pending-item']")).length === 2, 20_000);
    await page.click("[data-testid='filter-all']");
    await page.waitForSelector("#grid:not([aria-busy])", { state: "attached" });
  }
  const [first, second] = (await hostMedia(server, ev)).map((m) => m.id);
  assert.deepEqual(await states(b), { [first]: "pending", [second]: "pending" });

  await a.click(`.media-item[data-id='${first}'] [data-testid='approve']`);
  await b.waitForFunction((id) => document.querySelector(`.media-item[data-id='${id}']`)?.dataset.moderation === "approved", first, { timeout: 3_000 });
  assert.equal(await b.textContent("#count-approved"), "1");
  assert.equal(await b.textContent("#count-pending"), "1");

  await b.click(`.media-item[data-id='${second}'] [data-testid='reject']`);
  await b.fill(`.media-item[data-id='${second}'] [data-testid='reject-reason']`, "duplicate");
  await b.click(`.media-item[data-id='${second}'] [data-testid='reject-confirm']`);
  await a.waitForFunction((id) => document.querySelector(`.media-item[data-id='${id}']`)?.dataset.moderation === "rejected", second, { timeout: 3_000 });
  assert.match(await a.textContent(`.media-item[data-id='${second}']`), /Reason: duplicate/);

  assert.deepEqual(await states(a), { [first]: "approved", [second]: "rejected" });
  assert.deepEqual(await states(b), await states(a));
  assert.deepEqual(reads, { a: ["pending", "all"], b: ["pending", "all"] }, "each tab read each list it showed once, and never asked what changed");
  const media = await hostMedia(server, ev);
  assert.deepEqual(Object.fromEntries(media.map((m) => [m.id, m.moderation])), { [first]: "approved", [second]: "rejected" });
  await context.close();
});
