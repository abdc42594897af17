// The guest page's service worker (www/sw.js): after a first visit, a
// repeat visit gets a ready uploader with the network cut — the page, its
// scripts, its strings and the package come from the worker's cache — while
// the API, uploads and media always go to the server and are never cached.
// A new deploy (any file of www/ changed) replaces the cache on the next
// visit, and the visit after that runs the new files.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, createEvent, hostMedia, guestUrl, photos, until, ROOT, TARGET } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved } from "./pages.mjs";

let server, browser, www;
before(async () => {
  // A copy of the pages, which the deploy test edits.
  mkdirSync(join(TARGET, "test-data"), { recursive: true });
  www = mkdtempSync(join(TARGET, "test-data", "e2e-sw-www-"));
  cpSync(join(ROOT, "www"), www, { recursive: true });
  server = await startServer("service-worker", [], { wwwDir: www });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.stop();
  if (www) rmSync(www, { recursive: true, force: true });
});

/** Waits until the page's origin has an activated worker; resolves to the cache names. */
async function untilWorkerActive(page) {
  await page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    const worker = registration.active;
    if (worker.state !== "activated") await new Promise((r) => worker.addEventListener("statechange", () => worker.state === "activated" && r()));
  });
  return page.evaluate(async () => (await caches.keys()).filter((n) => n.startsWith("upload-once-shell-")));
}

/** The paths of everything the worker's caches hold. */
function cachedPaths(page) {
  return page.evaluate(async () => {
    const paths = [];
    // The shell's caches (the shares' cache, www/sw.js, holds the last event opened).
    for (const name of (await caches.keys()).filter((n) => n.startsWith("upload-once-shell-"))) {
      for (const request of await (await caches.open(name)).keys()) paths.push(new URL(request.url).pathname);
    }
    return paths.sort();
  });
}

/** Records every response the page gets: path, method, whether the worker answered it. */
function recordResponses(page) {
  const seen = [];
  page.on("response", (r) => {
    const url = new URL(r.url());
    // A blob: URL never goes to the network (the uploader's timer worker
    // is made from one).
    if (url.protocol === "blob:") return;
    seen.push({ path: url.pathname, origin: url.origin, method: r.request().method(), fromWorker: r.fromServiceWorker(), status: r.status() });
  });
  page.on("requestfailed", (r) => {
    const url = new URL(r.url());
    seen.push({ path: url.pathname, origin: url.origin, method: r.method(), failed: true });
  });
  return seen;
}

test("a repeat visit is ready with the network cut; the API and uploads still go to the server", async () => {
  const ev = await createEvent(server);
  const url = guestUrl(server, ev);
  const context = await browser.newContext();

  // First visit: from the network; the worker is registered once the page is ready.
  const first = await openGuest(context, url);
  assert.equal(await first.evaluate(() => navigator.serviceWorker.controller), null, "a first visit is not controlled");
  const names = await untilWorkerActive(first);
  assert.equal(names.length, 1, `one cache: ${names}`);
  const version = await first.evaluate(() => document.querySelector("link[rel=modulepreload][href^='/pkg/v/']").getAttribute("href").split("/")[3]);
  const i18n = readFileSync(join(ROOT, "www/i18n.js"), "utf8");
  const languages = JSON.parse(/LANGUAGES = (\[[^\]]*\])/.exec(i18n)[1].replaceAll("'", '"'));
  assert.deepEqual(await cachedPaths(first), [
    "/", "/common.js", "/guest.js", "/i18n.js", ...languages.map((l) => `/i18n/${l}.js`).sort(),
    `/pkg/v/${version}/upload_once.js`, `/pkg/v/${version}/upload_once_bg.wasm`, "/style.css",
  ].sort(), "the shell, every language and the versioned package; nothing else");
  await first.close();

  // Second visit, offline: nothing reaches the server, and the uploader is ready.
  await context.setOffline(true);
  const page = await context.newPage();
  const seen = recordResponses(page);
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  assert.notEqual(await page.evaluate(() => navigator.serviceWorker.controller), null, "the repeat visit is controlled");
  assert.equal(await page.evaluate(() => document.body.dataset.error ?? null), null);
  assert.ok(await page.isEnabled("[data-testid='file-input']"), "the pick button works");
  const shell = seen.filter((r) => !r.path.startsWith("/v1/"));
  for (const path of ["/", "/guest.js", "/common.js", "/i18n.js", "/style.css", `/pkg/v/${version}/upload_once.js`, `/pkg/v/${version}/upload_once_bg.wasm`]) {
    assert.ok(shell.some((r) => r.path === path && r.fromWorker && r.status === 200), `${path} came from the worker: ${JSON.stringify(seen)}`);
  }
  assert.deepEqual(shell.filter((r) => !r.fromWorker), [], "nothing of the shell went to the network");
  // The page's API calls meanwhile (if any) were not answered from a cache.
  for (const r of seen.filter((r) => r.path.startsWith("/v1/"))) {
    assert.ok(r.failed && !r.fromWorker, `an API call while offline fails, never answered by the worker: ${JSON.stringify(r)}`);
  }

  // Back online: a photo goes up and is saved, every API call and the PUT
  // through to the server, and nothing of them lands in the cache.
  await context.setOffline(false);
  await pick(page, photos(1, 80_000, "sw"));
  await untilAllSaved(page, 1);
  assert.equal((await hostMedia(server, ev)).length, 1, "the server has the photo");
  const api = seen.filter((r) => r.path.startsWith("/v1/") && !r.failed);
  assert.ok(api.some((r) => r.method === "POST" && /\/attempts/.test(r.path)), `the attempt was authorized by the server: ${JSON.stringify(api)}`);
  assert.ok(seen.some((r) => r.method === "PUT" && !r.failed), `the bytes were PUT: ${JSON.stringify(seen)}`);
  const network = seen.filter((r) => !r.failed && (r.path.startsWith("/v1/") || r.method !== "GET" || r.path.startsWith("/media") || r.path.startsWith("/storage")));
  assert.ok(network.length > 0);
  assert.deepEqual(network.filter((r) => r.fromWorker), [], "the worker answers none of the API, upload or media requests");
  const cached = await cachedPaths(page);
  assert.deepEqual(cached.filter((p) => !(p === "/" || /^\/(guest|common|i18n)\.js$|^\/i18n\/\w+\.js$|^\/style\.css$|^\/pkg\/v\//.test(p))), [], `only the shell is cached: ${cached}`);
  await context.close();
});

test("the host page shares files with the guest page but never gets them from its cache", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext();
  const first = await openGuest(context, guestUrl(server, ev));
  const [name] = await untilWorkerActive(first);
  // The next visit is the one the worker controls.
  const guest = await openGuest(context, guestUrl(server, ev));
  // A cached copy that differs from the server's.
  await guest.evaluate(async (name) => {
    const cache = await caches.open(name);
    await cache.put("/common.js", new Response("// the cached copy\n", { headers: { "content-type": "text/javascript" } }));
  }, name);
  const forGuest = await guest.evaluate(() => fetch("/common.js").then((r) => r.text()));
  assert.ok(forGuest === "// the cached copy\n", `the guest page gets the cache's copy, not ${forGuest.slice(0, 60)}…`);

  const host = await context.newPage();
  await host.goto(`${server.base}/host.html?event=${ev.event.slug}#token=${encodeURIComponent(ev.host_token)}`);
  await host.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  assert.notEqual(await host.evaluate(() => navigator.serviceWorker.controller), null, "the host page is in the worker's scope");
  const forHost = await host.evaluate(() => fetch("/common.js").then((r) => r.text()));
  assert.ok(forHost === readFileSync(join(www, "common.js"), "utf8"), `the host page gets the server's copy, not ${forHost.slice(0, 60)}…`);
  await context.close();
});

test("a new deploy replaces the cache on the next visit", async () => {
  const ev = await createEvent(server);
  const url = guestUrl(server, ev);
  const context = await browser.newContext();
  const first = await openGuest(context, url);
  const [before] = await untilWorkerActive(first);
  await first.close();

  // The deploy: a changed guest.js (its precompressed copies go with it, as
  // `cargo xtask` would write them anew).
  const marker = `// deployed ${Date.now()}`;
  appendFileSync(join(www, "guest.js"), `\n${marker}\n`);
  for (const copy of ["guest.js.br", "guest.js.gz"]) rmSync(join(www, copy), { force: true });

  // The next visit still runs the old build (from the cache) and meanwhile
  // installs the new worker, which fills a new cache and drops the old one.
  const second = await openGuest(context, url);
  const names = await until("the new cache to replace the old one", async () => {
    const keys = await second.evaluate(async () => (await caches.keys()).filter((n) => n.startsWith("upload-once-shell-")));
    return keys.length === 1 && keys[0] !== before && keys;
  }, 20_000, 100);
  assert.notEqual(names[0], before);
  await second.close();

  // The visit after that runs the new guest.js, offline.
  await context.setOffline(true);
  const third = await openGuest(context, url);
  const served = await third.evaluate(() => fetch("/guest.js").then((r) => r.text()));
  assert.ok(served.includes(marker), "the cache holds the deployed guest.js");
  await context.close();
});
