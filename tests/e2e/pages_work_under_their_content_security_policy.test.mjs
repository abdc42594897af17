// The guest, host and wall pages work under the Content-Security-Policy the
// server sends them (no inline script but the import map, by its hash; the
// .wasm compiled under 'wasm-unsafe-eval'; requests only to the origins the
// policy names), with no violation reported in any page. The host link keeps
// its token in the fragment; an older `?token=` link still opens and is
// rewritten into the fragment. `?api=` naming another origin is refused
// with the page's message and nothing is sent there, unless the server
// allows that origin (`--page-api-origin`).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, hostUrl, wallUrl, photos, until } from "./harness.mjs";
import { launch, pick, untilAllSaved } from "./pages.mjs";

const EVIL = "https://evil.example";

let server, browser;
before(async () => {
  // `?api=` may name http://localhost:<port>: this same server under another
  // origin, which CORS lets the pages' origin (127.0.0.1) call.
  server = await startServer("csp", (port) => ["--page-api-origin", `http://localhost:${port}`, "--allowed-origin", `http://127.0.0.1:${port}`]);
  browser = await launch();
});
after(async () => { await browser?.close(); await server?.stop(); });

/**
 * A context whose pages report every CSP violation (the event, and
 * Chromium's console line) and every request; requests to evil.example are
 * recorded and never leave the browser.
 */
async function watchedContext() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const seen = { violations: [], requests: [], evil: [] };
  // Injected through the DevTools protocol, before any script of the page.
  await context.addInitScript(() => {
    window.__cspViolations = [];
    window.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`);
    }, true);
  });
  context.on("console", (m) => { if (/Content.Security.Policy/i.test(m.text())) seen.violations.push(m.text()); });
  context.on("request", (r) => seen.requests.push(r.url()));
  await context.route(`${EVIL}/**`, (route) => { seen.evil.push(route.request().url()); return route.abort(); });
  return { context, seen };
}

/** Opens `url` in a new page; asserts the document came with a policy. */
async function open(context, url) {
  const page = await context.newPage();
  const response = await page.goto(url);
  const csp = (await response.allHeaders())["content-security-policy"] ?? "";
  assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'/, `${url} is sent with its policy`);
  return page;
}

/** Every violation the pages of `context` reported. */
async function violations(context, seen) {
  const inPages = [];
  for (const page of context.pages()) inPages.push(...(await page.evaluate(() => window.__cspViolations ?? [])));
  return [...inPages, ...seen.violations];
}

test("guest, host and wall work under the policy, with no violation", async () => {
  const ev = await createEvent(server);
  const { context, seen } = await watchedContext();

  // The guest: the wasm compiles, previews (blob:) show, two photos are saved.
  const guest = await open(context, guestUrl(server, ev));
  await guest.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  await pick(guest, photos(2, 60_000, "csp"));
  await untilAllSaved(guest, 2);
  // The uploader's timer worker (made from a Blob, allowed by `worker-src
  // blob:`) runs: its waits are not slowed when the tab is hidden.
  assert.ok(guest.workers().some((w) => w.url().startsWith("blob:")), "the guest page's timer worker runs");

  // The host, from a link with the token in the fragment: the list, the QR code, a decision.
  const host = await open(context, hostUrl(server, ev));
  await until("2 waiting items", async () => (await host.$$("[data-testid='pending-item']")).length === 2);
  await host.waitForSelector("[data-testid='qr'] svg");
  const [first] = await host.$$eval("[data-testid='pending-item']", (els) => els.map((e) => e.dataset.id));
  await host.click(`[data-testid='pending-item'][data-id='${first}'] [data-testid='approve']`);
  await until("the approval to be stored", async () => (await hostMedia(server, ev, "approved")).length === 1);

  // The wall, live: the approved photo shows (a rendition, from the API's origin).
  const wall = await open(context, wallUrl(server, ev));
  await wall.waitForSelector("body[data-live='1']", { timeout: 20_000 });
  await until("the photo to show on the wall", () => wall.evaluate(() =>
    [...document.querySelectorAll("[data-testid='wall-item'] img")].some((img) => img.complete && img.naturalWidth > 0)), 30_000);

  // No query sent to the server carries the host token.
  assert.deepEqual(seen.requests.filter((u) => new URL(u).search.includes(ev.host_token)), []);
  assert.deepEqual(await violations(context, seen), [], "no CSP violation in any page");
  await context.close();
});

test("the host token stays in the fragment; an older ?token= link is moved there", async () => {
  const ev = await createEvent(server);
  const { context, seen } = await watchedContext();

  const fresh = await open(context, hostUrl(server, ev));
  await fresh.waitForSelector("body[data-ready='1']");
  assert.deepEqual(await fresh.evaluate(() => [location.search, location.hash]),
    [`?event=${ev.event.slug}`, `#token=${ev.host_token}`]);

  const old = await open(context, `${server.base}/host.html?event=${ev.event.slug}&token=${encodeURIComponent(ev.host_token)}&refresh_ms=60000`);
  await old.waitForSelector("body[data-ready='1']");
  assert.deepEqual(await old.evaluate(() => [location.search, location.hash]),
    [`?event=${ev.event.slug}&refresh_ms=60000`, `#token=${ev.host_token}`], "the token moved into the fragment");
  await old.waitForSelector("[data-testid='invite'] [data-testid='qr'] svg");
  // A reload (the address as it is now) still opens the host page.
  await old.reload();
  await old.waitForSelector("body[data-ready='1']");
  assert.equal(await old.evaluate(() => document.body.dataset.error ?? null), null);

  // Only that first request of the old link had the token in its query.
  const withToken = seen.requests.filter((u) => new URL(u).search.includes(ev.host_token));
  assert.deepEqual(withToken.map((u) => new URL(u).pathname), ["/host.html"]);
  assert.deepEqual(await violations(context, seen), []);
  await context.close();
});

test("?api= naming another origin is refused, and nothing is sent there", async () => {
  const ev = await createEvent(server);
  const { context, seen } = await watchedContext();
  const api = `api=${encodeURIComponent(`${EVIL}/v1`)}`;
  const links = {
    guest: `${guestUrl(server, ev)}&${api}`,
    host: hostUrl(server, ev, `&${api}`),
    wall: `${wallUrl(server, ev)}&${api}`,
  };
  for (const [name, link] of Object.entries(links)) {
    const page = await open(context, link);
    await page.waitForSelector("[data-testid='message']");
    assert.equal(await page.evaluate(() => document.body.dataset.error), "api_not_allowed", name);
    const message = await page.textContent("[data-testid='message']");
    assert.match(message, /another server/, `${name}: ${message}`);
    assert.ok(message.includes(EVIL), `${name} names the origin: ${message}`);
  }
  // Give anything that would still go out a moment.
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(seen.evil, [], "no request to the other origin");
  assert.deepEqual(seen.requests.filter((u) => u.startsWith(EVIL)), []);
  assert.deepEqual(await violations(context, seen), [], "the pages did not even try");
  await context.close();
});

test("?api= naming an origin the server allows is used", async () => {
  const ev = await createEvent(server);
  const { context, seen } = await watchedContext();
  const other = `http://localhost:${server.port}`;
  const guest = await open(context, `${guestUrl(server, ev)}&api=${encodeURIComponent(other)}`);
  await guest.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  await pick(guest, photos(1, 60_000, "allowed"));
  await untilAllSaved(guest, 1);
  assert.ok(seen.requests.some((u) => u.startsWith(`${other}/v1/`)), "the API was called at the allowed origin");
  const wall = await open(context, `${wallUrl(server, ev)}&api=${encodeURIComponent(other)}`);
  await wall.waitForSelector("body[data-ready='1'][data-live='1']", { timeout: 20_000 });
  assert.equal(await wall.evaluate(() => document.body.dataset.error ?? null), null);
  assert.deepEqual(await violations(context, seen), []);
  await context.close();
});
