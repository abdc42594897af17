// Helpers that read and drive the guest page through its data-testid hooks.
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, until, guestUrl, wallUrl, hostMedia, createEvent } from "./harness.mjs";

/** Launches headless Chromium. */
export function launch() {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** Opens the guest page and waits until it restored its attempts. */
export async function openGuest(context, url) {
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  return page;
}

/** Every card's state, as the guest reads it. */
export function cards(page) {
  return page.$$eval("[data-testid='card']", (els) =>
    els.map((el) => {
      const text = (id) => el.querySelector(`[data-testid='${id}']`)?.textContent?.trim() ?? "";
      return {
        id: el.dataset.id,
        filename: el.dataset.filename,
        transfer: text("transfer"),
        confirmation: text("confirmation"),
        moderation: text("moderation"),
        error: text("error"),
      };
    }),
  );
}

/** The attempts as the uploader sees them (window.uploader.list()). */
export function attempts(page) {
  return page.evaluate(() => window.uploader.list());
}

/** Waits until there are `n` cards and every one shows "Saved". */
export async function untilAllSaved(page, n, ms = 60_000) {
  return until(`${n} cards to show "Saved"`, async () => {
    const all = await cards(page);
    return all.length === n && all.every((c) => /^Saved/.test(c.confirmation)) && all;
  }, ms, 200);
}

/** Picks files in the guest page's file input. */
export async function pick(page, files) {
  await page.setInputFiles("[data-testid='file-input']", files);
}

/** The SHA-256 that each authorize `page` sends from now on carries, by file name (filled as they go). */
export function authorizeHashes(page) {
  const sent = new Map();
  page.on("request", (r) => {
    if (r.method() === "POST" && /\/v1\/events\/[^/]+\/attempts$/.test(new URL(r.url()).pathname)) {
      const body = JSON.parse(r.postData());
      sent.set(body.filename, body.sha256);
    }
  });
  return sent;
}

/** The ids of the items a wall page shows, sorted. */
export const wallIds = (wall) => wall.$$eval("[data-testid='wall-item']", (els) => els.map((e) => e.dataset.id).sort());

/** Opens the guest page of `ev` in a new context of `browser` (made with `contextOptions`). */
export async function openGuestInNewContext(browser, server, ev, contextOptions) {
  const context = await browser.newContext(contextOptions);
  const page = await openGuest(context, guestUrl(server, ev));
  return { context, page };
}

/** `openGuestInNewContext`, then picks `files` and waits until every card shows "Saved". */
export async function saveInNewContext(browser, server, ev, files, contextOptions) {
  const opened = await openGuestInNewContext(browser, server, ev, contextOptions);
  await pick(opened.page, files);
  await untilAllSaved(opened.page, files.length);
  return opened;
}

/**
 * Slows `page`'s uplink to `bytesPerSecond`, with 20 ms of latency, through
 * CDP network emulation; `unthrottle()` lifts both.
 */
export async function throttleUplink(context, page, bytesPerSecond) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: bytesPerSecond });
  return { unthrottle: () => cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 }) };
}

/**
 * Saves `files` from the guest page of `ev` (`saveInNewContext`) and checks
 * the host lists each one, then opens the wall in the same context
 * (re-reading the approved set every second) and waits until it shows them
 * all.
 */
export async function uploadAndShowOnWall(browser, server, ev, files) {
  const { context, page: guest } = await saveInNewContext(browser, server, ev, files);
  const media = await hostMedia(server, ev);
  assert.equal(media.length, files.length);

  const wall = await context.newPage();
  await wall.goto(`${wallUrl(server, ev)}&resync_ms=1000`);
  await until(`all ${files.length} photos on the wall`, async () => (await wallIds(wall)).length === files.length, 20_000);
  return { context, guest, media, wall };
}

/** Opens the wall of `ev` in a new page of `context` and waits until its `n` photos have loaded. */
export async function openWallWithPhotos(context, server, ev, n) {
  const wall = await context.newPage();
  await wall.goto(wallUrl(server, ev));
  await until(`${n} photos on the wall`, async () => (await wall.$$("[data-testid='wall-item'] img")).length === n, 20_000);
  await wall.waitForFunction(() => [...document.querySelectorAll("[data-testid='wall-item'] img")].every((i) => i.complete && i.naturalWidth > 0));
  return wall;
}

/** Opens, in a new page of `context`, the wall of a new event with nothing on it. */
export async function openEmptyWall(context, server) {
  const quiet = await createEvent(server);
  const emptyWall = await context.newPage();
  await emptyWall.goto(wallUrl(server, quiet));
  await emptyWall.waitForSelector("body[data-ready='1']");
  return emptyWall;
}
