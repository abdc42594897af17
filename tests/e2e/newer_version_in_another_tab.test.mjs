// A newer version of the app opened in another tab upgrades the database:
// the guest page can no longer save its attempt records. It says so in a
// banner (never only in the console), and the attempt waits instead of
// uploading on the strength of a state that is not on disk.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, photos, until } from "./harness.mjs";
import { launch, openGuest, pick, attempts } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("newer-version"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("records that cannot be saved show a banner and hold the upload", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext();
  // The page's clock runs as usual until the test drives it.
  await context.clock.install();
  const page = await openGuest(context, guestUrl(server, ev));
  const puts = [];
  page.on("request", (r) => { if (r.method() === "PUT") puts.push(r.url()); });
  // The other tab: same origin, no uploader of its own.
  const other = await context.newPage();
  await other.goto(`${server.base}/healthz`);
  assert.equal(await page.isVisible("[data-testid='storage-banner']"), false);

  // The authorize is held at the network until the test lets it go.
  let open;
  const gate = new Promise((resolve) => { open = resolve; });
  await page.route((url) => /\/v1\/events\/[^/]+\/attempts$/.test(url.pathname), async (route) => {
    if (route.request().method() === "POST") await gate;
    await route.continue();
  });
  await pick(page, photos(1));
  await until("the attempt to be recorded", async () => (await attempts(page)).length === 1, 10_000);
  // Its content hash is written with the record while its first authorize
  // is held: that write is on disk before the other tab takes the database.
  await until("the record stored with its SHA-256", () => other.evaluate(() => new Promise((resolve, reject) => {
    const request = indexedDB.open("upload-once");
    request.onsuccess = () => {
      const db = request.result;
      const get = db.transaction("attempts").objectStore("attempts").getAll();
      get.onsuccess = () => { db.close(); resolve(get.result.length === 1 && typeof get.result[0].sha256 === "string"); };
      get.onerror = () => { db.close(); reject(get.error); };
    };
    request.onerror = () => reject(request.error);
  })), 10_000, 50);

  // The other tab opens the database at a newer version; the guest page's
  // connection makes way.
  const version = await other.evaluate(() => new Promise((resolve, reject) => {
    const request = indexedDB.open("upload-once", 1000);
    request.onsuccess = () => { const v = request.result.version; request.result.close(); resolve(v); };
    request.onerror = () => reject(request.error);
  }));
  assert.equal(version, 1000);

  // The authorize goes through: the server authorizes, but that state cannot
  // be saved here.
  const authorized = page.waitForResponse((r) => r.request().method() === "POST" && /\/v1\/events\/[^/]+\/attempts$/.test(new URL(r.url()).pathname));
  open();
  assert.equal((await authorized).status(), 201, "the server authorized the attempt");
  await page.waitForSelector("[data-testid='storage-banner']", { state: "visible", timeout: 15_000 });
  assert.match(await page.textContent("[data-testid='storage-banner']"), /reload this page/);
  assert.equal((await page.evaluate(() => window.uploader.storageError)).code, "storage_unavailable");
  // The page holds the authorization, unsaved. Its clock is then run a
  // minute ahead: every timer it set fires (the write of the records is tried
  // again after 1, 2, 4, 8, 16 and 30 s), and never does it send the bytes.
  const [held] = await until("the authorization to reach the page", async () => {
    const list = await attempts(page);
    return list.length === 1 && list[0].objectKey && list;
  }, 10_000, 50);
  await page.clock.runFor(60_000);
  assert.equal((await page.evaluate(() => window.uploader.storageError))?.code, "storage_unavailable", "still unsaved a minute on");
  const [attempt] = await attempts(page);
  assert.equal(attempt.id, held.id);
  assert.ok(attempt.objectKey, "the authorization is kept");
  assert.deepEqual(puts, [], "no PUT for an attempt whose record is not saved");
  assert.notEqual(attempt.confirmation, "confirmed", "nothing is confirmed on an unsaved state");
  assert.equal(attempt.bytesSent, 0, "no bytes left for an attempt whose record is not saved");
  assert.equal((await hostMedia(server, ev)).length, 0);
  await context.close();
});
