// A newer version of the app opened in another tab upgrades the database:
// the guest page can no longer save its attempt records. It says so in a
// banner (never only in the console), and the attempt waits instead of
// uploading on the strength of a state that is not on disk.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startServer, createEvent, hostMedia, guestUrl, photos, until } from "./harness.mjs";
import { launch, openGuest, pick, attempts } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("newer-version"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("records that cannot be saved show a banner and hold the upload", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext();
  const page = await openGuest(context, guestUrl(server, ev));
  // The other tab: same origin, no uploader of its own.
  const other = await context.newPage();
  await other.goto(`${server.base}/healthz`);
  assert.equal(await page.isVisible("[data-testid='storage-banner']"), false);

  // Offline, the photo is recorded but nothing is sent.
  await context.setOffline(true);
  await pick(page, photos(1));
  await until("the attempt to be recorded", async () => (await attempts(page)).length === 1, 10_000);

  // The other tab opens the database at a newer version; the guest page's
  // connection makes way.
  const version = await other.evaluate(() => new Promise((resolve, reject) => {
    const request = indexedDB.open("upload-once", 1000);
    request.onsuccess = () => { const v = request.result.version; request.result.close(); resolve(v); };
    request.onerror = () => reject(request.error);
  }));
  assert.equal(version, 1000);

  // Back online: the server authorizes, but that state cannot be saved here.
  await context.setOffline(false);
  await page.waitForSelector("[data-testid='storage-banner']", { state: "visible", timeout: 15_000 });
  assert.match(await page.textContent("[data-testid='storage-banner']"), /reload this page/);
  assert.equal((await page.evaluate(() => window.uploader.storageError)).code, "storage_unavailable");
  await sleep(2_000);
  const [attempt] = await attempts(page);
  assert.notEqual(attempt.confirmation, "confirmed", "nothing is confirmed on an unsaved state");
  assert.equal(attempt.bytesSent, 0, "no bytes left for an attempt whose record is not saved");
  assert.equal((await hostMedia(server, ev)).length, 0);
  await context.close();
});
