// The guest page's service worker: a repeat visit needs no network before
// the uploader is usable.
//
// - **Cache-first for the guest page's shell**: the page (`/`,
//   `/index.html`, whatever its query), its scripts, the stylesheet, every
//   language's strings, and the package at its versioned path
//   (`/pkg/v/<version>/upload_once.js` and `.wasm`). All of it is fetched
//   into one cache when the worker installs, and answered from there, for
//   the guest page only (the host page and the wall share `common.js`,
//   `i18n.js` and `style.css`, and always get them from the network, as
//   they get their own scripts).
// - **Network-only for everything else**: the API (`/v1/…`), signed upload
//   URLs, media and storage URLs, other origins, the host page and the
//   wall, and any request but a GET (uploads are PUTs): the worker does not
//   answer them (no `respondWith`), so the browser sends them as if it were
//   not there, and nothing of theirs is ever cached.
// - **One cache per build.** The server fills in `BUILD` as it sends this
//   file (server/src/routes/assets.rs): `version`, a hash of everything the
//   cache could hold (every file of `www/`, the guest page as the server
//   renders it, the package), and `pkg`, the package's version. A new deploy
//   changes this file, so the browser installs the new worker on the next
//   visit; it fills its own cache, takes over at once (`skipWaiting`) and
//   deletes every older one. The visit after that gets the new build.
// - Served by anything else (the placeholder left as it is), it caches
//   nothing, answers nothing and deletes what an earlier build cached.
//
// - **Shared from the gallery** (the manifest's `share_target`, issue 33):
//   files a guest shares to the installed app arrive as a POST to `/share`.
//   The worker keeps them in a cache of their own and sends the browser to
//   the event the guest last opened, with `?share=<id>`; the guest page
//   takes them from there and gives them to `add`, as if picked (the same
//   write-ahead record, the same dedup), then deletes them. The app's start
//   URL (`/?source=app`) opens that event too. Without an event opened
//   before, the page says its link is missing, and the files wait.
//
// The guest page registers it once the uploader is ready (www/guest.js).
// docs/pages.md, "Repeat visits" and "Shared from the gallery".

const BUILD = "upload-once:build";

const PREFIX = "upload-once-shell-";
const BUILT = typeof BUILD === "object" && BUILD !== null && typeof BUILD.version === "string";
const CACHE = BUILT ? `${PREFIX}${BUILD.version}` : null;

/** The guest page's navigations, by path: answered with the cached "/". */
const GUEST_PAGES = ["/", "/index.html"];

/** Everything the guest page loads before its uploader is ready. */
const SHELL = [
  "/",
  "/guest.js",
  "/common.js",
  "/i18n.js",
  "/i18n/en.js",
  "/i18n/de.js",
  "/i18n/fr.js",
  "/i18n/es.js",
  "/style.css",
  ...(BUILT && BUILD.pkg ? ["upload_once.js", "upload_once_bg.wasm"].map((f) => `/pkg/v/${BUILD.pkg}/${f}`) : []),
];
const CACHED = new Set(SHELL);

self.addEventListener("install", (event) => {
  if (!BUILT) return;
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      // The HTTP cache's copies when they are fresh (the versioned package
      // is immutable; the rest is revalidated: `no-cache`).
      await cache.addAll(SHELL);
      // A new build takes over at once: a page already open keeps what it
      // loaded; the next visit gets the new build.
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
      }
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.method === "POST" && url.pathname === SHARE_ACTION) {
    event.respondWith(receiveShare(request));
    return;
  }
  if (request.mode === "navigate" && GUEST_PAGES.includes(url.pathname)) {
    if (url.searchParams.get("source") === "app") {
      event.respondWith(openLastEvent());
      return;
    }
    event.waitUntil(rememberEvent(url));
  }
  if (!BUILT || request.method !== "GET") return;
  if (request.mode === "navigate") {
    if (GUEST_PAGES.includes(url.pathname)) event.respondWith(cached(request, "/"));
    return;
  }
  if (url.search || !CACHED.has(url.pathname)) return;
  event.respondWith(forGuest(event, url.pathname));
});

/** The cached copy of `key`, else the network's answer to `request`. */
async function cached(request, key) {
  const cache = await caches.open(CACHE);
  return (await cache.match(key, { ignoreVary: true })) ?? fetch(request);
}

/** A shell file: from the cache for the guest page, from the network for the others. */
async function forGuest(event, key) {
  const client = event.clientId ? await self.clients.get(event.clientId) : null;
  const guest = client && GUEST_PAGES.includes(new URL(client.url).pathname);
  return guest ? cached(event.request, key) : fetch(event.request);
}

// ------------------------------------------------ shared from the gallery ----

/** The manifest's `share_target.action`. */
const SHARE_ACTION = "/share";
/** Shared files until the guest page takes them, and the last event opened. */
const SHARES = "upload-once-shared";
const LAST_EVENT = "/__upload-once/last-event";
/** The guest page's parameters that name its event (not `share`, `source`). */
const EVENT_PARAMS = ["event", "code", "api", "lang"];

/** Remembers the event of a guest page navigation, for shares and the app's start. */
async function rememberEvent(url) {
  if (!url.searchParams.get("event") || !url.searchParams.get("code")) return;
  const query = new URLSearchParams();
  for (const name of EVENT_PARAMS) {
    const value = url.searchParams.get(name);
    if (value) query.set(name, value);
  }
  const cache = await caches.open(SHARES);
  await cache.put(LAST_EVENT, new Response(query.toString()));
}

/** The last event's guest page, with `extra` parameters. */
async function lastEventUrl(extra = {}) {
  const cache = await caches.open(SHARES);
  const last = await cache.match(LAST_EVENT);
  const query = new URLSearchParams(last ? await last.text() : "");
  for (const [name, value] of Object.entries(extra)) query.set(name, value);
  const search = query.toString();
  return new URL(search ? `/?${search}` : "/", self.location.origin).href;
}

async function openLastEvent() {
  return Response.redirect(await lastEventUrl(), 303);
}

// The guest taps the browser's notice of uploads handed over to it (a
// Background Fetch, www/sw-background.js): the event's page opens.
self.addEventListener("backgroundfetchclick", (event) => {
  event.waitUntil(lastEventUrl().then((url) => self.clients.openWindow(url)));
});

/**
 * Keeps the shared files (each under `/__upload-once/share/<id>/<n>`, its
 * name and time in headers) and sends the browser to the guest page.
 */
async function receiveShare(request) {
  let files = [];
  try {
    const form = await request.formData();
    files = form.getAll("media").filter((f) => typeof f === "object" && f !== null && "name" in f);
  } catch (err) {
    console.warn("upload-once: a share without files:", err && err.name);
  }
  const id = self.crypto.randomUUID();
  const cache = await caches.open(SHARES);
  // One share waits at a time: an earlier one the guest never answered
  // goes, so posts to `/share` (any site can make one) cannot pile up in
  // this origin's storage, which the uploads need.
  for (const request of await cache.keys()) {
    if (new URL(request.url).pathname.startsWith("/__upload-once/share/")) await cache.delete(request);
  }
  await Promise.all(
    files.map((file, n) =>
      cache.put(
        `/__upload-once/share/${id}/${n}`,
        new Response(file, {
          headers: {
            "content-type": file.type || "application/octet-stream",
            "x-name": encodeURIComponent(file.name),
            "x-last-modified": String(file.lastModified),
          },
        }),
      ),
    ),
  );
  return Response.redirect(await lastEventUrl({ share: id }), 303);
}
