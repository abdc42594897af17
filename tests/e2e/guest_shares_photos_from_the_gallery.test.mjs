// Issue 33: the guest page is an installable web app whose manifest has a
// `share_target`. Photos shared to it from the gallery arrive as a POST to
// `/share`; the service worker keeps them and sends the browser to the event
// the guest opened last, whose page asks the guest, then gives them to
// `add`: the same write-ahead record and the same dedup as a pick. (Any
// site can make such a POST, so nothing is sent before the guest's Add.) Chromium: the share is
// the multipart POST navigation the browser makes for a share target (a
// form posting to the manifest's action), through the real service worker
// and the real server.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, createEvent, hostMedia, photos, until, serveStatic } from "./harness.mjs";
import { launch, untilAllSaved, attempts, openGuestInNewContext } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("share"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** Waits until the page's service worker is active. */
async function untilWorkerActive(page) {
  await page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    const worker = registration.active;
    if (worker.state !== "activated") await new Promise((r) => worker.addEventListener("statechange", () => worker.state === "activated" && r()));
  });
}

/**
 * Once the first visit's worker is active, visits again: the worker sees
 * that navigation and so learns the event (the first visit registered it).
 */
async function visitSeenByTheWorker(page) {
  await untilWorkerActive(page);
  await page.reload();
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
}

/** Shares `files` as the browser does for the manifest's share target, from `page`; resolves once the guest page it lands on is ready. */
async function share(page, manifest, files) {
  const target = manifest.share_target;
  await page.evaluate(({ action, method, enctype, field }) => {
    const form = document.createElement("form");
    form.id = "share-form";
    form.action = action;
    form.method = method;
    form.enctype = enctype;
    const input = document.createElement("input");
    input.type = "file";
    input.name = field;
    input.multiple = true;
    input.id = "share-input";
    form.append(input);
    document.body.append(form);
  }, { action: target.action, method: target.method, enctype: target.enctype, field: target.params.files[0].name });
  await page.setInputFiles("#share-input", files);
  await Promise.all([
    page.waitForURL((url) => url.searchParams.has("share"), { timeout: 20_000 }),
    page.evaluate(() => document.getElementById("share-form").submit()),
  ]);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
}

/** What the shares' cache still holds, by path. */
function sharesLeft(page) {
  return page.evaluate(async () => {
    const cache = await caches.open("upload-once-shared");
    return (await cache.keys()).map((r) => new URL(r.url).pathname).filter((p) => p.startsWith("/__upload-once/share/"));
  });
}

test("photos shared from the gallery are added and uploaded once, and a second share of them sends and stores nothing new", async () => {
  const ev = await createEvent(server);
  const { context, page } = await openGuestInNewContext(browser, server, ev);

  const manifestHref = await page.getAttribute("link[rel='manifest']", "href");
  assert.equal(manifestHref, "/manifest.webmanifest");
  const manifest = await page.evaluate((href) => fetch(href).then((r) => r.json()), manifestHref);
  assert.equal(manifest.share_target.action, "/share");
  assert.equal(manifest.share_target.method, "POST");
  assert.equal(manifest.share_target.enctype, "multipart/form-data");
  assert.deepEqual(manifest.share_target.params.files[0].accept, ["image/*", "video/*"]);
  assert.equal(manifest.start_url, "/?source=app");
  // Android's launcher wants PNG icons of 192 and 512 px, iOS's home screen
  // an apple-touch-icon: each is served as a PNG of the size it claims.
  const touch = await page.getAttribute("link[rel='apple-touch-icon']", "href");
  const pngs = [...manifest.icons.filter((i) => i.type === "image/png").map((i) => [i.src, i.sizes]), [touch, "180x180"]];
  assert.deepEqual(pngs.map(([, sizes]) => sizes).sort(), ["180x180", "192x192", "512x512"]);
  for (const [src, sizes] of pngs) {
    const served = await page.evaluate(async (src) => {
      const r = await fetch(src);
      const bitmap = await createImageBitmap(await r.blob());
      return { type: r.headers.get("content-type"), size: `${bitmap.width}x${bitmap.height}` };
    }, src);
    assert.deepEqual(served, { type: "image/png", size: sizes }, src);
  }
  assert.ok(manifest.icons.some((i) => i.src === "/icon.svg" && i.sizes === "any"), "and the SVG for any size");

  // The worker learns the event from a visit it sees (the first one
  // registered it).
  await visitSeenByTheWorker(page);

  const puts = [];
  page.on("request", (r) => { if (r.method() === "PUT") puts.push(r.url()); });
  const shared = photos(2, 90_000, "gallery");
  await share(page, manifest, shared);
  assert.equal(new URL(page.url()).searchParams.get("event"), ev.event.slug, "the event opened last");
  await page.waitForSelector("[data-testid='shared-files']");
  assert.match(await page.textContent("[data-testid='shared-files']"), /2 files were shared/);
  assert.equal(puts.length, 0, "nothing sent before the guest says so");
  assert.equal((await attempts(page)).length, 0, "nothing recorded either");
  await page.click("[data-testid='shared-add']");
  const saved = await untilAllSaved(page, 2);
  assert.deepEqual(saved.map((c) => c.filename).sort(), ["gallery-1.png", "gallery-2.png"]);
  assert.equal((await hostMedia(server, ev)).length, 2);
  assert.equal(puts.length, 2, "one PUT per photo");
  await until("the share's files to be dropped from the worker's cache", async () => (await sharesLeft(page)).length === 0, 10_000);
  assert.equal(new URL(page.url()).searchParams.has("share"), false, "the address no longer names the share");

  // The same photos shared again. A share hands the page new File objects
  // (here with another modification time, as a gallery may), so each is a
  // new attempt; its content is already stored in the event, so it is
  // found at authorize and not sent again.
  const first = new Set((await attempts(page)).map((a) => a.id));
  await share(page, manifest, shared);
  await page.click("[data-testid='shared-add']");
  await until("the second share to be taken", async () => (await sharesLeft(page)).length === 0 && !new URL(page.url()).searchParams.has("share"), 20_000);
  await untilAllSaved(page, 4);
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 2, "stored once");
  const again = (await attempts(page)).filter((a) => !first.has(a.id));
  assert.equal(again.length, 2);
  for (const a of again) {
    assert.ok(a.duplicateOf, `${a.fileName} is a duplicate`);
    assert.ok(media.some((m) => m.id === a.media?.id), `${a.fileName} is the media already stored`);
  }
  assert.equal(puts.length, 2, "not sent again");
  await context.close();
});

test("a share the guest discards, or leaves for another, sends and keeps nothing", async () => {
  const ev = await createEvent(server);
  const { context, page } = await openGuestInNewContext(browser, server, ev);
  const manifest = await page.evaluate(() => fetch("/manifest.webmanifest").then((r) => r.json()));
  await visitSeenByTheWorker(page);
  const requests = [];
  page.on("request", (r) => { if (r.method() !== "GET" && !new URL(r.url()).pathname.startsWith("/share")) requests.push(`${r.method()} ${new URL(r.url()).pathname}`); });
  // A share left unanswered is replaced by the next: one waits at a time.
  await share(page, manifest, photos(2, 50_000, "ignored"));
  await share(page, manifest, photos(1, 50_000, "unasked"));
  assert.equal((await sharesLeft(page)).length, 1, "only the last share is kept");
  assert.match(await page.textContent("[data-testid='shared-files']"), /1 file was shared/);
  await page.click("[data-testid='shared-discard']");
  await page.waitForSelector("body[data-share='discarded']");
  assert.deepEqual(await sharesLeft(page), []);
  assert.equal((await attempts(page)).length, 0);
  assert.deepEqual(requests, [], "no request for the discarded file");
  assert.equal((await hostMedia(server, ev)).length, 0);
  await context.close();
});

test("another site posting files to the share target gets nothing uploaded without the guest", async () => {
  const ev = await createEvent(server);
  const { context, page } = await openGuestInNewContext(browser, server, ev);
  await visitSeenByTheWorker(page);
  const puts = [];
  page.on("request", (r) => { if (r.method() === "PUT") puts.push(r.url()); });
  // A page on another origin with a form aimed at the share target, as any
  // site the guest visits could have (no referrer sent).
  const dir = mkdtempSync(join(tmpdir(), "evil-"));
  writeFileSync(join(dir, "index.html"), `<!doctype html><form id="f" method="post" enctype="multipart/form-data" action="${server.base}/share" referrerpolicy="no-referrer"><input type="file" name="media" id="i" multiple></form>`);
  const evil = await serveStatic(dir);
  try {
    await page.goto(evil.origin);
    await page.setInputFiles("#i", photos(2, 40_000, "planted"));
    await Promise.all([
      page.waitForURL((url) => url.origin === server.base && url.searchParams.has("share"), { timeout: 20_000 }),
      page.evaluate(() => document.getElementById("f").submit()),
    ]);
    await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
    // The page acts on the share: it asks the guest (or, as it did before
    // it asked, adds the files).
    await until("the page to act on the share", async () =>
      (await page.$("[data-testid='shared-files']")) !== null || (await attempts(page)).length > 0, 10_000);
    assert.equal((await attempts(page)).length, 0, "nothing recorded");
    assert.deepEqual(puts, [], "nothing sent");
    assert.equal((await hostMedia(server, ev)).length, 0);
  } finally {
    await evil.close();
    rmSync(dir, { recursive: true, force: true });
  }
  await context.close();
});

test("the installed app's start opens the event the guest opened last", async () => {
  const ev = await createEvent(server);
  const { context, page } = await openGuestInNewContext(browser, server, ev);
  await visitSeenByTheWorker(page);
  await page.goto(`${server.base}/?source=app`);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  const url = new URL(page.url());
  assert.equal(url.searchParams.get("event"), ev.event.slug);
  assert.equal(url.searchParams.get("code"), ev.guest_code);
  await context.close();
});
