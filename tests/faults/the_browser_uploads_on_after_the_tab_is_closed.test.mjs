// Issue 33: uploads that outlive the tab (Chromium's Background Fetch).
//
// The guest picks ten photos; their PUTs crawl (the page's uplink is
// throttled to 20 kB/s through CDP; the browser's own Background Fetch is
// not, but every PUT waits at the proxy a while). The guest switches away: the page is hidden
// (tests/e2e/cdp.mjs, since Playwright keeps its pages visible), and after
// its grace period it hands every file to a Background Fetch of its
// service worker (www/sw-background.js). Then:
//
// - **closed**: the tab is closed while the fetch's PUTs are still held at
//   the proxy. With no page open, the browser sends them and the service
//   worker confirms each attempt (the package runs there). The server holds
//   ten media, one per attempt; a new visit restores all ten as confirmed.
// - **the page returns**: the guest comes back while the fetch's PUTs are
//   on the wire. The page takes everything back (aborts the fetch, which
//   the service worker does not read as the guest's cancel) and finishes
//   itself, racing whatever of the fetch reached the store: each attempt is
//   still stored once.
import { test, before, after, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { TARGET, createEvent } from "../e2e/harness.mjs";
import { hide, openGuestTab, photosOnDisk, pickFiles, startChromium } from "../e2e/cdp.mjs";
import { startStack, rowsByAttempt, until } from "./stack.mjs";

// Each test in a browser of its own (a fresh profile: its own service
// worker and Background Fetches).
let stack, browser, dir;
before(async () => {
  stack = await startStack("background-fetch");
  dir = mkdtempSync(join(TARGET, "background-photos-"));
});
beforeEach(async () => { browser = await startChromium(); });
afterEach(async () => { await browser?.close(); });
after(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const list = async (tab) => JSON.parse(await tab.evaluate("JSON.stringify(window.uploader.list())"));

/**
 * A guest tab with ten photos picked, hidden once its first PUTs are on the
 * wire, and handed over: resolves to the tab, the cover tab's id and the
 * event. The page's uplink crawls; every PUT waits `putDelayMs` at the
 * proxy before it goes on (so the fetch's are still on the wire for a
 * while).
 */
async function handedOver(prefix, putDelayMs) {
  await stack.proxy.reset();
  const ev = await createEvent(stack.server, { moderation: "none" });
  await stack.proxy.rules({ method: "PUT", path: "/storage/*", action: { kind: "delay", ms: putDelayMs } });
  const files = photosOnDisk(dir, 10, 200_000, prefix);
  const tab = await openGuestTab(browser, stack.guestUrl(ev));
  await tab.send("Network.enable");
  await tab.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 20_000 });
  await until("the service worker", () => tab.evaluate("navigator.serviceWorker.ready.then((r) => !!r.active && !!r.backgroundFetch)"), 30_000);
  await pickFiles(tab, "[data-testid='file-input']", files);
  await until("three PUTs on the wire", async () => (await list(tab)).filter((a) => a.transfer === "uploading").length === 3, 30_000, 50);
  const cover = await hide(browser, tab);
  const handed = await until("the hand-over", () => tab.evaluate("document.body.dataset.background ?? ''").then((b) => b.startsWith("handed:") && b), 30_000, 50);
  assert.equal(handed, "handed:10", "every file goes to the Background Fetch, the seven not yet authorized too");
  const views = await list(tab);
  assert.ok(views.every((a) => a.inBackground && !a.paused && !a.drivenHere && !a.terminal), JSON.stringify(views));
  return { tab, cover, ev, ids: views.map((a) => a.id) };
}

test("the tab is closed: the browser sends the files and the service worker confirms each once", async () => {
  const { tab, cover, ev, ids } = await handedOver("closed", 1_500);
  await tab.close();
  const closedAt = Date.now();
  const { rows } = await until("ten media with no page open", async () => {
    const found = await rowsByAttempt(stack.server, ev);
    return found.media.length >= 10 && found;
  }, 60_000, 200);
  assert.ok(Date.now() - closedAt > 1_000, "confirmed after the tab was gone (the fetch's PUTs were held)");
  for (const id of ids) assert.equal(rows.get(id), 1, `attempt ${id} stored once`);
  const confirms = await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"));
  assert.equal(new Set(confirms.map((r) => r.path)).size, 10, "each attempt confirmed, by the service worker");

  // The guest opens the event again: all ten confirmed, nothing sent again.
  const puts = (await stack.proxy.forwarded("PUT", () => true)).length;
  const again = await openGuestTab(browser, stack.guestUrl(ev));
  try {
    const views = await until("ten confirmed after the visit", async () => {
      const all = await list(again);
      return all.length === 10 && all.every((a) => a.confirmation === "confirmed") && all;
    }, 30_000, 100);
    assert.deepEqual(views.map((a) => a.id).sort(), [...ids].sort());
    assert.ok(views.every((a) => !a.inBackground && !a.paused));
    assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 10, "0 duplicates");
    assert.equal((await stack.proxy.forwarded("PUT", () => true)).length, puts, "no byte sent again");
  } finally {
    await again.close();
    await browser.send("Target.closeTarget", { targetId: cover });
  }
});

test("the page returns while the fetch runs: it takes the files back and each is still stored once", async () => {
  const { tab, cover, ev, ids } = await handedOver("returns", 2_500);
  try {
    // The fetch runs (its PUTs held at the proxy): the guest comes back.
    const running = await tab.evaluate(`navigator.serviceWorker.ready.then(async (r) => {
      const ids = await r.backgroundFetch.getIds();
      const fetches = await Promise.all(ids.map((id) => r.backgroundFetch.get(id)));
      return fetches.filter((f) => f && f.result === "" && f.id.includes(${JSON.stringify(ev.event.slug)})).length;
    })`);
    assert.equal(running, 1, "the page's Background Fetch runs");
    await browser.send("Target.closeTarget", { targetId: cover });
    // Back on a good network (the fetch itself never was throttled).
    await tab.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await until("the page taken back", () => tab.evaluate("document.body.dataset.background === 'here'"), 10_000, 50);
    const views = await until("every photo confirmed", async () => {
      const all = await list(tab);
      return all.length === 10 && all.every((a) => a.confirmation === "confirmed") && all;
    }, 60_000, 100);
    assert.ok(views.every((a) => !a.inBackground && !a.paused && a.error === null), JSON.stringify(views));
    const { media, rows } = await rowsByAttempt(stack.server, ev);
    assert.equal(media.length, 10, "ten media");
    for (const id of ids) assert.equal(rows.get(id), 1, `attempt ${id} stored once`);
    const left = await tab.evaluate(`navigator.serviceWorker.ready.then((r) => r.backgroundFetch.getIds())
      .then((ids) => ids.filter((id) => id.includes(${JSON.stringify(ev.event.slug)})).length)`);
    assert.equal(left, 0, "the fetch was aborted");
  } finally {
    await tab.close().catch(() => {});
  }
});

test("a cancel in the browser's download UI cancels the uploads it carried", async () => {
  const { tab, cover, ev, ids } = await handedOver("cancelled", 5_000);
  try {
    // What the download UI's cancel does: the fetch is aborted, by no page.
    const aborted = await tab.evaluate(`navigator.serviceWorker.ready.then(async (r) => {
      const [id] = await r.backgroundFetch.getIds();
      return (await r.backgroundFetch.get(id)).abort();
    })`);
    assert.equal(aborted, true);
    const views = await until("every upload cancelled", async () => {
      const all = await list(tab);
      return all.length === 10 && all.every((a) => a.error?.code === "cancelled") && all;
    }, 30_000, 100);
    assert.ok(views.every((a) => a.terminal && !a.inBackground && a.confirmation !== "confirmed"), JSON.stringify(views));
    assert.deepEqual(views.map((a) => a.id).sort(), [...ids].sort());
    assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 0, "nothing saved");
  } finally {
    await tab.close().catch(() => {});
    await browser.send("Target.closeTarget", { targetId: cover }).catch(() => {});
  }
});
