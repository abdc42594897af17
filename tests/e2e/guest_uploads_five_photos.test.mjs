// A guest uploads 5 photos: every card ends "Saved", the server holds
// exactly 5 media records, and every attempt was sent once.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, photos, screenshotPath } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved, attempts } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("five"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("five photos are all saved, exactly once each", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await openGuest(context, guestUrl(server, ev));
  const puts = [];
  page.on("request", (r) => { if (r.method() === "PUT") puts.push(r.url()); });
  await pick(page, photos(5, 150_000));
  const saved = await untilAllSaved(page, 5);
  assert.deepEqual(saved.map((c) => c.filename).sort(), ["photo-1.png", "photo-2.png", "photo-3.png", "photo-4.png", "photo-5.png"]);
  for (const c of saved) assert.match(c.moderation, /Waiting for the host/);
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 5);
  const ids = (await attempts(page)).map((a) => a.id).sort();
  assert.deepEqual(media.map((m) => m.attempt_id).sort(), ids, "one media record per attempt");
  assert.equal(new Set(puts).size, 5, "one PUT per attempt");
  assert.equal(puts.length, 5);
  await page.screenshot({ path: screenshotPath("guest-desktop.png"), fullPage: true });
  await context.close();
});
