// A file over the event's size limit: a clear message in the page, and no
// request about it leaves the browser.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, photo } from "./harness.mjs";
import { launch, openGuest, pick, attempts, untilAllSaved } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("oversize"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("an oversize photo is refused in the page with no request sent", async () => {
  const ev = await createEvent(server, { maxFileBytes: 500_000 });
  const context = await browser.newContext();
  const page = await openGuest(context, guestUrl(server, ev));
  const requests = [];
  page.on("request", (r) => {
    if (r.method() !== "GET") requests.push({ method: r.method(), path: new URL(r.url()).pathname, body: r.postData() });
  });
  await pick(page, [{ name: "huge.png", mimeType: "image/png", buffer: photo(7, 900_000) }]);
  const refusal = await page.waitForSelector("[data-testid='refusal']");
  const text = await refusal.textContent();
  assert.match(text, /huge\.png/);
  assert.match(text, /500 kB/, "the message names the limit");
  assert.equal((await attempts(page)).length, 0, "nothing was recorded");

  // A photo within the limit goes all the way through; by then the only
  // requests sent are its own: nothing about the refused one ever left.
  await pick(page, [{ name: "small.png", mimeType: "image/png", buffer: photo(8, 100_000) }]);
  const [small] = await untilAllSaved(page, 1);
  const [a] = await attempts(page);
  assert.equal(small.filename, "small.png");
  assert.deepEqual(requests.map((r) => `${r.method} ${r.path}`), [
    `POST /v1/events/${ev.event.slug}/attempts`, `PUT /storage/${a.objectKey}`, `POST /v1/attempts/${a.id}/confirm`,
  ], "only the small photo was sent");
  assert.equal(JSON.parse(requests[0].body).filename, "small.png");
  assert.deepEqual((await hostMedia(server, ev)).map((m) => m.attempt_id), [a.id]);
  await context.close();
});
