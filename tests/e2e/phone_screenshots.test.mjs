// A phone first: every page in every state people see, at 360×740 (a small
// phone) and 1280×800 (a laptop), saved as target/e2e-screenshots/
// <page>-<state>-<width>.png, and no state scrolls sideways at either width
// (document.documentElement.scrollWidth <= innerWidth).
// Guest: empty, uploading, offline, needs file, rejected; host: waiting
// list; wall: full, empty.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, hostUrl, photo, photos, until, screenshotPath } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved, attempts, cards, openWallWithPhotos, openEmptyWall } from "./pages.mjs";

const SIZES = [[360, 740], [1280, 800]];

let server, browser;
before(async () => { server = await startServer("screenshots"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** Screenshots `page` at both sizes; fails if it scrolls sideways at either. */
async function shoot(page, name) {
  for (const [width, height] of SIZES) {
    await page.setViewportSize({ width, height });
    const { scroll, inner } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: innerWidth }));
    assert.equal(inner, width);
    assert.ok(scroll <= inner, `${name} at ${width} px scrolls sideways: scrollWidth ${scroll} > ${inner}`);
    await page.screenshot({ path: screenshotPath(`${name}-${width}.png`), fullPage: true, animations: "disabled" });
  }
  await page.setViewportSize({ width: SIZES[0][0], height: SIZES[0][1] });
}

async function moderate(ev, id, decision, reason) {
  const res = await fetch(`${server.base}/v1/media/${id}/moderation`, {
    method: "POST",
    headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
    body: JSON.stringify(reason ? { decision, reason } : { decision }),
  });
  assert.equal(res.status, 200, await res.text());
}

const slow = (cdp, rate) => cdp.send("Network.emulateNetworkConditions", { offline: false, latency: rate ? 20 : 0, downloadThroughput: -1, uploadThroughput: rate ?? -1 });

test("every page and state at 360 and 1280 px, none scrolling sideways", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
  const guest = await openGuest(context, guestUrl(server, ev));
  await guest.waitForFunction(() => /\d/.test(document.querySelector("[data-testid='limits']").textContent));
  await shoot(guest, "guest-empty");

  // Uploading, part-way, on a slow uplink (long names too: they must not widen the page).
  const cdp = await context.newCDPSession(guest);
  await cdp.send("Network.enable");
  await slow(cdp, 60_000);
  await pick(guest, photos(3, 200_000, "a-rather-long-file-name-from-a-phone-camera-IMG_20261201_101500"));
  await until("a transfer part-way", async () => (await attempts(guest)).some((a) => a.transfer === "uploading" && a.bytesSent > 0.1 * a.bytesTotal), 30_000, 50);
  await shoot(guest, "guest-uploading");

  // Offline: the banner, every card waiting.
  await context.setOffline(true);
  await guest.waitForSelector("[data-testid='offline-banner']", { state: "visible" });
  await until("every attempt offline", async () => (await attempts(guest)).every((a) => a.offline && a.transfer !== "uploading"), 30_000, 50);
  await shoot(guest, "guest-offline");
  await context.setOffline(false);
  await slow(cdp, null);
  await untilAllSaved(guest, 3);

  // More photos for the host's list and the wall.
  await pick(guest, [11, 12, 13, 14, 15, 16].map((seed) => ({ name: `wall-${seed}.png`, mimeType: "image/png", buffer: photo(seed, 40_000, 320, seed % 2 ? 240 : 420) })));
  await untilAllSaved(guest, 9);

  const host = await context.newPage();
  await host.goto(hostUrl(server, ev, `&code=${ev.guest_code}`));
  await until("9 waiting items and the QR code", async () => (await host.$$("[data-testid='pending-item']")).length === 9 && (await host.$("[data-testid='qr'] svg")), 20_000);
  // The previews in view have loaded (the rest load lazily, as they scroll in).
  await host.waitForFunction(() => [...document.querySelectorAll(".media-preview img")].filter((i) => i.getBoundingClientRect().top < innerHeight).every((i) => i.complete && i.naturalWidth > 0));
  await shoot(host, "host-waiting");

  // The host rejects one with a reason and approves the rest: the guest sees it.
  const media = await hostMedia(server, ev);
  const [refused, ...kept] = media;
  await moderate(ev, refused.id, "reject", "a private moment");
  for (const m of kept) await moderate(ev, m.id, "approve");
  await guest.evaluate(() => window.uploader.refresh());
  await until("the guest to see the rejection", async () => (await cards(guest)).some((c) => /Not accepted: a private moment/.test(c.moderation)), 20_000);
  await shoot(guest, "guest-rejected");

  const wall = await openWallWithPhotos(context, server, ev, 8);
  await shoot(wall, "wall-full");

  const emptyWall = await openEmptyWall(context, server);
  await shoot(emptyWall, "wall-empty");
  await context.close();
});

test("the guest page asking for a file again, at 360 and 1280 px", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
  // This browser refuses to keep files (as Safari's private mode does): a
  // reload mid-transfer leaves the attempt waiting for its file.
  await context.addInitScript(() => {
    const put = IDBObjectStore.prototype.put;
    IDBObjectStore.prototype.put = function (value, key) {
      if (value instanceof Blob) throw new DOMException("this test's browser keeps no files", "DataCloneError");
      return put.call(this, value, key);
    };
  });
  const guest = await openGuest(context, guestUrl(server, ev));
  const cdp = await context.newCDPSession(guest);
  await cdp.send("Network.enable");
  await slow(cdp, 60_000);
  await pick(guest, photos(1, 400_000, "not-kept"));
  await until("the transfer part-way, its file not kept", async () => (await attempts(guest)).some((a) => a.transfer === "uploading" && a.bytesSent > 0 && !a.fileKept), 30_000, 50);
  await guest.reload();
  await guest.waitForSelector("body[data-ready='1']");
  await slow(cdp, null);
  await until("the card asking for the file", async () => (await attempts(guest)).some((a) => a.transfer === "needs_file"), 20_000, 50);
  await guest.waitForSelector("[data-testid='pick-again']");
  await shoot(guest, "guest-needs-file");
  await context.close();
});
