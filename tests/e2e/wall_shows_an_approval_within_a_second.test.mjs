// The wall is live: once it listens to the server's feed (Server-Sent
// Events), a photo the host approves shows on it within a second (the
// cursor poll, every 3 s, is only the fallback), and one the host takes
// down leaves it at once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { startServer, createEvent, wallUrl, photo, renditionsSettled, until } from "./harness.mjs";
import { launch } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("live-wall"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

async function call(method, path, token, body, extra = {}) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra },
    body: body && JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status}`);
  return response.json();
}

/** A guest's photo, confirmed (pending: the event needs moderation). */
async function upload(ev, seed) {
  const { session_token: token } = await call("POST", `/v1/events/${ev.event.slug}/sessions`, null, { guest_code: ev.guest_code });
  const bytes = photo(seed, 20_000, 64, 48);
  const id = randomUUID();
  const attempt = await call("POST", `/v1/events/${ev.event.slug}/attempts`, token, { id, filename: `p${seed}.png`, size: bytes.length, content_type: "image/png" });
  assert.equal((await fetch(attempt.upload.url, { method: "PUT", headers: attempt.upload.headers, body: bytes })).status, 200);
  return call("POST", `/v1/attempts/${id}/confirm`, token, { size: bytes.length, content_type: "image/png" }, { "idempotency-key": id });
}

test("a photo the host approves shows on the wall within a second", async () => {
  const ev = await createEvent(server);
  const first = await upload(ev, 1);
  const second = await upload(ev, 2);
  // Measured from an approval of photos whose renditions are made (the
  // wall waits for them).
  await renditionsSettled(server.base, ev);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const wall = await context.newPage();
  await wall.goto(wallUrl(server, ev));
  await wall.waitForSelector("body[data-live='1']");

  for (const media of [first, second]) {
    const approved = Date.now();
    await call("POST", `/v1/media/${media.id}/moderation`, ev.host_token, { decision: "approve" });
    // On the wall: in it, whether or not its image has loaded yet (an
    // item's height is its image's; the load is checked below, and under
    // load a rendition can take longer than the feed).
    await wall.waitForSelector(`[data-testid='wall-item'][data-id='${media.id}']`, { state: "attached", timeout: 5_000 });
    const elapsed = Date.now() - approved;
    assert.ok(elapsed < 1_000, `on the wall ${elapsed} ms after the approval`);
  }
  // The photo shown is the display rendition, loaded.
  await until("the photo to load", () => wall.evaluate((id) => {
    const img = document.querySelector(`[data-id='${id}'] img`);
    return img && img.complete && img.naturalWidth === 64;
  }, first.id), 10_000);

  const taken = Date.now();
  await call("POST", `/v1/media/${first.id}/moderation`, ev.host_token, { decision: "reject" });
  await wall.waitForSelector(`[data-testid='wall-item'][data-id='${first.id}']`, { state: "detached", timeout: 5_000 });
  assert.ok(Date.now() - taken < 1_000, "taken down within a second");
  await context.close();
});
