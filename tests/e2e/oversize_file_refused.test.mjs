// A file over the event's size limit: a clear message in the page, and no
// request about it leaves the browser.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startServer, createEvent, hostMedia, guestUrl, photo } from "./harness.mjs";
import { launch, openGuest, pick, attempts } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("oversize"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("an oversize photo is refused in the page with no request sent", async () => {
  const ev = await createEvent(server, { maxFileBytes: 500_000 });
  const context = await browser.newContext();
  const page = await openGuest(context, guestUrl(server, ev));
  const requests = [];
  page.on("request", (r) => { if (r.method() !== "GET") requests.push(`${r.method()} ${r.url()}`); });
  await pick(page, [{ name: "huge.png", mimeType: "image/png", buffer: photo(7, 900_000) }]);
  const refusal = await page.waitForSelector("[data-testid='refusal']");
  const text = await refusal.textContent();
  assert.match(text, /huge\.png/);
  assert.match(text, /500 KB/, "the message names the limit");
  await sleep(500);
  assert.deepEqual(requests, [], "nothing was sent");
  assert.equal((await attempts(page)).length, 0, "nothing was recorded");
  assert.equal((await hostMedia(server, ev)).length, 0);
  await context.close();
});
