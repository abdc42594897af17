// The host approves 2 of 4 saved photos: they appear on the wall, and the
// guest page shows "On the wall" for those 2 and "Waiting" for the rest.
// Also saves the phone, host and wall screenshots.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, hostUrl, wallUrl, photos, until, screenshotPath } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved, cards } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("approved photos reach the wall and the guest sees which", async () => {
  const ev = await createEvent(server);
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const guest = await openGuest(phone, guestUrl(server, ev));
  await pick(guest, photos(4, 60_000));
  await untilAllSaved(guest, 4);

  const desk = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const host = await desk.newPage();
  await host.goto(hostUrl(server, ev));
  await host.waitForSelector("[data-testid='pending-item']");
  await until("4 pending items", async () => (await host.$$("[data-testid='pending-item']")).length === 4);
  await host.screenshot({ path: screenshotPath("host.png"), fullPage: true });
  const pending = await host.$$eval("[data-testid='pending-item']", (els) => els.map((e) => e.dataset.id));
  const approved = pending.slice(0, 2);
  for (const id of approved) {
    await host.click(`[data-testid='pending-item'][data-id='${id}'] [data-testid='approve']`);
  }
  await until("the host's decisions to be stored", async () => (await hostMedia(server, ev, "approved")).length === 2);

  const wall = await desk.newPage();
  await wall.goto(wallUrl(server, ev));
  await until("2 wall items", async () => (await wall.$$("[data-testid='wall-item']")).length === 2, 20_000);
  const onWall = await wall.$$eval("[data-testid='wall-item']", (els) => els.map((e) => e.dataset.id).sort());
  assert.deepEqual(onWall, [...approved].sort());
  await wall.screenshot({ path: screenshotPath("wall.png"), fullPage: true });

  // The guest asks for fresh moderation states (the page also polls).
  await guest.evaluate(() => window.uploader.refresh());
  const media = await hostMedia(server, ev);
  const approvedAttempts = new Set(media.filter((m) => approved.includes(m.id)).map((m) => m.attempt_id));
  await until("the guest page to show the host's decisions", async () => {
    const all = await cards(guest);
    return all.filter((c) => /On the wall/.test(c.moderation)).length === 2 && all.filter((c) => /Waiting/.test(c.moderation)).length === 2;
  }, 20_000);
  for (const c of await cards(guest)) {
    assert.equal(/On the wall/.test(c.moderation), approvedAttempts.has(c.id), `${c.filename}: ${c.moderation}`);
  }
  await guest.screenshot({ path: screenshotPath("guest-phone.png"), fullPage: true });
  await phone.close();
  await desk.close();
});
