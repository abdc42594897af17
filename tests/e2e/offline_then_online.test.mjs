// Going offline mid-upload, then back online: the guest sees the offline
// banner, the upload pauses, and completes once the browser is back online.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, photos, until } from "./harness.mjs";
import { launch, pick, untilAllSaved, attempts, openGuestInNewContext, throttleUplink } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("offline"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("an upload interrupted by going offline completes after coming back", async () => {
  const ev = await createEvent(server);
  const { context, page } = await openGuestInNewContext(browser, server, ev);
  const { unthrottle } = await throttleUplink(context, page, 300_000);
  await pick(page, photos(3, 600_000));
  await until("a transfer to start", async () => (await attempts(page)).some((a) => a.transfer === "uploading" && a.bytesSent > 0), 30_000, 50);

  await context.setOffline(true);
  await page.waitForSelector("[data-testid='offline-banner']", { state: "visible" });
  // Offline, nothing new leaves: the bytes already under way finish or
  // fail, and then every attempt waits, offline, with nothing in flight.
  const offline = await until("every attempt to wait for the network", async () => {
    const list = await attempts(page);
    return list.length === 3 && list.every((a) => a.offline && a.transfer !== "uploading" && a.confirmation !== "confirming") && list;
  }, 30_000, 50);
  assert.ok(offline.every((a) => a.confirmation === "unconfirmed"), `nothing is confirmed while offline: ${JSON.stringify(offline)}`);
  assert.ok(offline.every((a) => a.transfer !== "failed" && a.retries === 0), `going offline is not a failure, nor a retry: ${JSON.stringify(offline)}`);

  await unthrottle();
  await context.setOffline(false);
  await untilAllSaved(page, 3, 90_000);
  await page.waitForSelector("[data-testid='offline-banner']", { state: "hidden" });
  assert.equal((await hostMedia(server, ev)).length, 3);
  await context.close();
});
