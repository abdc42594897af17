// On a first visit over a slow network the guest page's pick button works
// before the package's `.wasm` has arrived: the files picked meanwhile wait
// in the page, are said to wait, and go to the uploader once it opens —
// each stored once. Nothing reaches the API before the uploader is open. A
// wrong guest code learnt only then still ends in the page's message, with
// nothing recorded or uploaded.
//
// The `.wasm` is held back by the test (a route that answers only when the
// test says so), so "before the uploader is open" is a fact, not a race.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, photos } from "./harness.mjs";
import { launch, pick, untilAllSaved } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("early-pick"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/**
 * A page whose `.wasm` waits for `release()`; `api` lists its API requests,
 * `errors` the exceptions its scripts did not catch.
 */
async function heldBack(url) {
  const context = await browser.newContext();
  const page = await context.newPage();
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  let asked = 0;
  await page.route("**/upload_once_bg.wasm", async (route) => {
    asked += 1;
    await released;
    await route.continue();
  });
  const api = [];
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => { if (new URL(r.url()).pathname.startsWith("/v1/")) api.push(`${r.method()} ${new URL(r.url()).pathname}`); });
  await page.goto(url);
  return { context, page, release, api, errors, asked: () => asked };
}

/** Whether leaving the page now would make the browser ask first. */
const leaveWarns = (page) => page.evaluate(() => {
  const e = new Event("beforeunload", { cancelable: true });
  dispatchEvent(e);
  return e.defaultPrevented;
});

/** Whether the page's uploader is open (`upload-once:ready`, `window.uploader`). */
const isOpen = (page) => page.evaluate(() => Boolean(window.uploader) || performance.getEntriesByName("upload-once:ready").length > 0);

test("files picked before the uploader is open wait, then are uploaded once", async () => {
  const ev = await createEvent(server);
  const { context, page, release, api, errors, asked } = await heldBack(guestUrl(server, ev));
  await page.waitForSelector("[data-testid='file-input']", { state: "attached" });
  await page.waitForFunction(() => performance.getEntriesByName("upload-once:usable").length > 0);
  assert.equal(await page.locator("#guest").isVisible(), true, "the pick button shows before the .wasm is in");
  assert.ok(asked() >= 1, "the .wasm was asked for (and is held)");
  assert.equal(await isOpen(page), false, "the uploader is not open while its .wasm is held");
  assert.equal(await leaveWarns(page), false, "nothing waits: leaving is not held up");

  await pick(page, photos(2, 120_000, "early"));
  const waiting = page.locator("[data-testid='waiting']");
  await waiting.waitFor();
  assert.match(await waiting.textContent(), /2 files picked/);
  assert.equal(await page.locator("[data-testid='card']").count(), 0, "no attempt exists before the uploader does");
  assert.deepEqual(api, [], "nothing reached the API before the uploader was open");
  assert.equal(await leaveWarns(page), true, "leaving would forget the picks: the browser asks first");

  release();
  const saved = await untilAllSaved(page, 2);
  assert.deepEqual(saved.map((c) => c.filename).sort(), ["early-1.png", "early-2.png"]);
  assert.equal(await waiting.count(), 0, "the waiting note is gone once the files are the uploader's");
  assert.equal(await leaveWarns(page), false, "and leaving is not held up any more");
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 2, "each picked file stored once");
  assert.equal(api.filter((r) => r.endsWith("/confirm")).length >= 2, true, `each attempt confirmed: ${api.join(", ")}`);
  assert.deepEqual(errors, [], "no uncaught error in the page");
  await context.close();
});

test("a file picked before a wrong guest code is known is not uploaded, and the page says why", async () => {
  const ev = await createEvent(server);
  const { context, page, release, errors } = await heldBack(`${server.base}/?event=${ev.event.slug}&code=not-the-code`);
  await page.waitForFunction(() => performance.getEntriesByName("upload-once:usable").length > 0);
  assert.equal(await isOpen(page), false);
  await pick(page, photos(1, 80_000, "refused"));
  await page.locator("[data-testid='waiting']").waitFor();
  assert.equal(await leaveWarns(page), true);

  release();
  const message = await page.waitForSelector("[data-testid='message']", { timeout: 20_000 });
  assert.match(await message.textContent(), /doesn't open the event/);
  assert.equal(await page.evaluate(() => document.body.dataset.error), "wrong_guest_code");
  assert.equal(await page.evaluate(() => window.uploader ? window.uploader.list().length : 0), 0, "nothing recorded");
  assert.equal((await hostMedia(server, ev)).length, 0, "nothing uploaded");
  assert.equal(await leaveWarns(page), false, "the dropped picks no longer hold up leaving the page");
  assert.deepEqual(errors, [], "no uncaught error in the page");
  await context.close();
});
