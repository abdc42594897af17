// Reloading the page in the middle of a transfer: the same cards come back
// (same attempt ids), the uploads finish by themselves, and the server holds
// exactly 5 media records.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, photos, until } from "./harness.mjs";
import { launch, pick, untilAllSaved, attempts, openGuestInNewContext, throttleUplink } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("reload"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("a reload mid-transfer keeps every attempt and finishes it once", async () => {
  const ev = await createEvent(server);
  const { context, page } = await openGuestInNewContext(browser, server, ev);
  // Slow the uplink so the reload lands mid-transfer.
  const { unthrottle } = await throttleUplink(context, page, 400_000);
  await pick(page, photos(5, 700_000));
  await until("a transfer to be part-way", async () => {
    const list = await attempts(page);
    return list.some((a) => a.transfer === "uploading" && a.bytesSent > 0.1 * a.bytesTotal && a.bytesSent < 0.9 * a.bytesTotal);
  }, 30_000, 50);
  const before = (await attempts(page)).map((a) => a.id).sort();
  assert.equal(before.length, 5);
  const savedBefore = (await attempts(page)).filter((a) => a.confirmation === "confirmed").length;
  assert.ok(savedBefore < 5, "the reload happens before everything is saved");

  await page.reload();
  await page.waitForSelector("body[data-ready='1']");
  await unthrottle();
  const afterReload = (await attempts(page)).map((a) => a.id).sort();
  assert.deepEqual(afterReload, before, "the same cards come back");
  // With their thumbnails: from the file kept in IndexedDB, or the stored media.
  await until("every card to show its photo again", async () => (await page.$$("[data-testid='card'] img")).length === 5, 20_000);
  await untilAllSaved(page, 5, 90_000);
  assert.deepEqual((await attempts(page)).map((a) => a.id).sort(), before, "and they are the ones that finish");
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 5, "exactly 5 media records");
  assert.deepEqual(media.map((m) => m.attempt_id).sort(), before);
  await context.close();
});
