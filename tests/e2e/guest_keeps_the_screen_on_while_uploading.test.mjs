// Issue 33: the guest page holds a Screen Wake Lock while the uploader is
// busy (`uploader.busy`, `onBusyChange`), with the guest's consent, and
// gives it back when every file is saved. Chromium (headless grants the
// lock; a refusal is made with CDP's Browser.setPermission). The page's
// requests are observed, not replaced: the real `WakeLock.request` runs and
// the test reads the real `WakeLockSentinel`s it returned.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, guestUrl, photos, until } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("wake"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** Records each wake lock request the page makes and the sentinel it got. */
function observeWakeLocks() {
  window.__wake = { requests: 0, refusals: 0, sentinels: [] };
  if (!("wakeLock" in navigator)) return;
  const request = WakeLock.prototype.request;
  WakeLock.prototype.request = async function (type) {
    window.__wake.requests += 1;
    try {
      const sentinel = await request.call(this, type);
      window.__wake.sentinels.push(sentinel);
      return sentinel;
    } catch (err) {
      window.__wake.refusals += 1;
      throw err;
    }
  };
}

/** A guest page whose storage PUTs wait until `release()` (the service worker is kept out, so every PUT passes the route). */
async function guestWithHeldPuts(ev) {
  const context = await browser.newContext({ serviceWorkers: "block" });
  await context.addInitScript(observeWakeLocks);
  const held = [];
  let holding = true;
  await context.route("**/*", (route) => {
    if (holding && route.request().method() === "PUT") held.push(route);
    else route.continue();
  });
  const page = await openGuest(context, guestUrl(server, ev));
  const release = () => {
    holding = false;
    for (const route of held.splice(0)) route.continue();
  };
  return { context, page, held, release };
}

const wakeState = (page) => page.evaluate(() => document.body.dataset.wakeLock);
const wake = (page) => page.evaluate(() => ({
  requests: window.__wake.requests,
  refusals: window.__wake.refusals,
  released: window.__wake.sentinels.map((s) => s.released),
  busy: window.uploader.busy,
}));

test("the screen is kept on while files go up, and let go when they are saved", async () => {
  const ev = await createEvent(server);
  const { context, page, held, release } = await guestWithHeldPuts(ev);
  assert.equal(await wakeState(page), "idle", "nothing to send: no lock");
  assert.equal(await page.isVisible("[data-testid='wake-toggle']"), true, "the guest sees the choice");
  assert.equal(await page.isChecked("[data-testid='wake-toggle']"), true, "on by default");
  const changes = page.evaluate(() => new Promise((resolve) => {
    const seen = [];
    const stop = window.uploader.onBusyChange((busy) => {
      seen.push(busy);
      if (!busy) { stop(); resolve(seen); }
    });
  }));

  await pick(page, photos(3, 120_000, "wake"));
  await until("a PUT on the wire", () => held.length >= 1, 20_000);
  await until("the page to hold the lock", async () => (await wakeState(page)) === "held", 10_000);
  const during = await wake(page);
  assert.equal(during.busy, true);
  assert.deepEqual(during.released, [false], "one real sentinel, held while the bytes are on the wire");

  release();
  await untilAllSaved(page, 3);
  await until("the page to let the lock go", async () => (await wakeState(page)) === "idle", 10_000);
  const afterwards = await wake(page);
  assert.equal(afterwards.busy, false);
  assert.deepEqual(afterwards.released, [true], "the sentinel was released, and no other asked for");
  assert.deepEqual(await changes, [true, false], "onBusyChange said busy, then not");
  await context.close();
});

// The browser lets a lock go by itself when the page is hidden (the screen
// locks, another app comes up) and the page asks again when it is shown.
// Pages cannot be hidden on this machine (headless or under Xvfb, every way
// tried leaves them visible), so the browser's letting go is the real
// sentinel's own release(), and the page being shown again is the
// visibilitychange event it listens for, with the page visible.
test("a lock the browser let go is asked for again when the page is shown, while files still go up", async () => {
  const ev = await createEvent(server);
  const { context, page, held, release } = await guestWithHeldPuts(ev);
  await pick(page, photos(2, 120_000, "again"));
  await until("a PUT on the wire", () => held.length >= 1, 20_000);
  await until("the page to hold the lock", async () => (await wakeState(page)) === "held", 10_000);

  await page.evaluate(() => window.__wake.sentinels[0].release());
  await until("the page to see the lock gone", async () => (await wakeState(page)) === "idle", 10_000);
  const gone = await wake(page);
  assert.deepEqual([gone.busy, gone.requests, gone.released], [true, 1, [true]], "still busy, not asked again while hidden");

  await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
  await until("the page to hold a lock again", async () => (await wakeState(page)) === "held", 10_000);
  assert.deepEqual((await wake(page)).released, [true, false], "a second, real sentinel");

  release();
  await untilAllSaved(page, 2);
  await until("the page to let it go", async () => (await wakeState(page)) === "idle", 10_000);
  assert.deepEqual((await wake(page)).released, [true, true]);
  await context.close();
});

test("a refused lock is said to the guest, and the files still go up", async () => {
  const ev = await createEvent(server);
  const { context, page, held, release } = await guestWithHeldPuts(ev);
  const cdp = await context.newCDPSession(page);
  const { targetInfo } = await cdp.send("Target.getTargetInfo");
  await cdp.send("Browser.setPermission", {
    permission: { name: "screen-wake-lock" },
    setting: "denied",
    origin: new URL(page.url()).origin,
    browserContextId: targetInfo.browserContextId,
  });

  await pick(page, photos(2, 120_000, "refused"));
  await until("a PUT on the wire", () => held.length >= 1, 20_000);
  await until("the refusal to be shown", async () => (await wakeState(page)) === "refused", 10_000);
  const note = await page.textContent("[data-testid='wake-note']");
  assert.match(note, /would not keep the screen on/);
  assert.equal((await wake(page)).refusals, 1);

  release();
  await untilAllSaved(page, 2);
  await until("the note to go once nothing is left", async () => (await wakeState(page)) === "idle", 10_000);
  assert.equal(await page.textContent("[data-testid='wake-note']"), "");
  await context.close();
});

test("turned off, the page asks for no lock, and the choice lasts to the next visit", async () => {
  const ev = await createEvent(server);
  const { context, page, release } = await guestWithHeldPuts(ev);
  release();
  await page.uncheck("[data-testid='wake-toggle']");
  assert.equal(await wakeState(page), "off");
  await pick(page, photos(2, 60_000, "off"));
  await untilAllSaved(page, 2);
  assert.equal((await wake(page)).requests, 0, "no lock asked for");

  await page.reload();
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  assert.equal(await page.isChecked("[data-testid='wake-toggle']"), false, "still off");
  assert.equal(await wakeState(page), "off");
  await context.close();
});
