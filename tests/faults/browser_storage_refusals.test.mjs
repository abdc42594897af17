// Moment 11: browser storage refuses.
// (a) IndexedDB quota exceeded on add [`quota_exceeded`, no request sent];
// (b) IndexedDB unavailable [`storage_unavailable`].
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createEvent } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, attempts, untilSettled, until } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m11"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("quota exceeded on add: quota_exceeded, nothing recorded, no request", async () => {
  await stack.proxy.reset();
  const ev = await createEvent(stack.server);
  const context = await browser.newContext();
  const page = await context.newPage();
  // A small quota for the origin, set before it first touches IndexedDB:
  // enough to open and keep the session, not for a batch of new attempts.
  const cdp = await context.newCDPSession(page);
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: stack.base, quotaSize: 120_000 });
  await page.goto(stack.guestUrl(ev));
  await page.waitForSelector("body[data-ready='1']");
  // A first visit joins the event in the background: that request is the
  // page's own, before anything is picked.
  await until("the session to be joined", () => page.evaluate(() => window.uploader.event !== null), 20_000, 50);
  await stack.proxy.reset();
  const outcome = await page.evaluate(async (n) => {
    const list = Array.from({ length: n }, (_, i) => new File([new Uint8Array(100)], `q-${i}.png`, { type: "image/png", lastModified: i }));
    try {
      await window.uploader.add(list);
      return { ok: true };
    } catch (e) {
      return { ok: false, code: e.code, message: e.message };
    }
  }, 400);
  assert.equal(outcome.ok, false, "the add is refused");
  assert.equal(outcome.code, "quota_exceeded", outcome.message);
  assert.equal((await attempts(page)).length, 0, "nothing half-written");

  // The guest frees space (the quota is back to normal: the refused
  // transaction's pages still count against the small one). One small photo
  // then goes all the way through; by then the only requests sent are its
  // own: nothing of the refused batch ever left.
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: stack.base });
  await pick(page, [{ name: "fits.png", mimeType: "image/png", buffer: Buffer.alloc(100, 7) }]);
  const [fits] = await untilSettled(page, 1);
  assert.equal(fits.fileName, "fits.png", "the refused batch left no attempt behind");
  assert.equal(fits.confirmation, "confirmed");
  const { requests } = await stack.proxy.log();
  assert.deepEqual(
    requests.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.path}`),
    [`POST /v1/events/${ev.event.slug}/attempts`, `PUT /storage/${fits.objectKey}`, `POST /v1/attempts/${fits.id}/confirm`],
    "only the photo that fits was sent",
  );
  await context.close();
});

test("without IndexedDB: storage_unavailable, shown to the guest", async () => {
  const ev = await createEvent(stack.server);
  const context = await browser.newContext();
  await context.addInitScript(() => { Object.defineProperty(window, "indexedDB", { value: undefined, configurable: true }); });
  const page = await context.newPage();
  await page.goto(stack.guestUrl(ev));
  // The page's own start has run (the wasm is initialised: `load` does not
  // wait for it) and refused.
  await page.waitForSelector("body[data-error]");
  assert.equal(await page.getAttribute("body", "data-error"), "storage_unavailable");
  const outcome = await page.evaluate(async (opts) => {
    const { Uploader } = await import("/pkg/upload_once.js");
    try { await Uploader.open(opts); return { code: "opened" }; } catch (e) { return { code: e.code, message: String(e && e.stack || e) }; }
  }, { apiBase: stack.base, event: ev.event.slug, guestCode: ev.guest_code });
  assert.equal(outcome.code, "storage_unavailable", outcome.message);
  const shown = await page.textContent("body");
  assert.match(shown, /storage|IndexedDB|private/i, "the guest page says what is wrong");
  await context.close();
});
