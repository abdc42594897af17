// Going offline mid-upload, then back online: the guest sees the offline
// banner, the upload pauses, and completes once the browser is back online.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startServer, createEvent, hostMedia, guestUrl, photos, until } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved, attempts } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("offline"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("an upload interrupted by going offline completes after coming back", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext();
  const page = await openGuest(context, guestUrl(server, ev));
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: 300_000 });
  await pick(page, photos(3, 600_000));
  await until("a transfer to start", async () => (await attempts(page)).some((a) => a.transfer === "uploading" && a.bytesSent > 0), 30_000, 50);

  await context.setOffline(true);
  await page.waitForSelector("[data-testid='offline-banner']", { state: "visible" });
  await sleep(1500);
  const offline = await attempts(page);
  assert.ok(offline.some((a) => a.confirmation !== "confirmed"), "something was left to do while offline");
  assert.ok(offline.every((a) => a.transfer !== "failed"), "going offline is not a failure");

  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await context.setOffline(false);
  await untilAllSaved(page, 3, 90_000);
  await page.waitForSelector("[data-testid='offline-banner']", { state: "hidden" });
  assert.equal((await hostMedia(server, ev)).length, 3);
  await context.close();
});
