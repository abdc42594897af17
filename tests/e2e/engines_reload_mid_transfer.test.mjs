// The guest flow with a reload in the middle of a transfer, in Firefox and
// WebKit (Chromium runs it in reload_mid_transfer.test.mjs with CDP
// throttling). The uplink is slowed by a throttling proxy, the same in every
// engine, so the reload lands mid-transfer.
// - firefox, webkit (a persistent profile, as Safari's normal windows): the
//   same cards come back and finish by themselves, each stored once.
// - webkit-private (Safari private browsing refuses Blobs in IndexedDB): the
//   unfinished cards come back asking for their file; picking the same files
//   again finishes the same attempts, each stored once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { hostMedia, photos, until, screenshotPath } from "./harness.mjs";
import { skipUnless, openThrottledGuest, untilReady, pick, attempts, untilAllSaved } from "./engines.mjs";

for (const engine of ["firefox", "webkit", "webkit-private"]) {
  test(`${engine}: a reload mid-transfer keeps every attempt and stores each file once`, { skip: skipUnless(engine) }, async () => {
    const { proxy, server, ev, page, close } = await openThrottledGuest(engine, `reload-${engine}`, 400_000);
    try {
      const files = photos(5, 700_000);
      await pick(page, files);
      await until("a transfer to be under way", async () => {
        const list = await attempts(page);
        return list.length === 5 && list.some((a) => a.transfer === "uploading" && a.bytesSent > 0);
      }, 30_000, 50);
      const before = (await attempts(page)).map((a) => a.id).sort();
      assert.ok((await attempts(page)).filter((a) => a.confirmation === "confirmed").length < 5, "the reload happens before everything is saved");

      await page.reload();
      await untilReady(page);
      proxy.setRate(null);
      const afterReload = await attempts(page);
      assert.deepEqual(afterReload.map((a) => a.id).sort(), before, "the same cards come back");
      if (engine === "webkit-private") {
        const waiting = await until("the unfinished cards to ask for their file", async () => {
          const list = await attempts(page);
          const unfinished = list.filter((a) => a.confirmation !== "confirmed");
          return unfinished.length > 0 && unfinished.every((a) => a.transfer === "needs_file") && unfinished;
        }, 30_000, 100);
        await page.screenshot(screenshotPath(`${engine}-needs-file.png`));
        assert.ok(waiting.length >= 1);
        await pick(page, files);
      }
      await untilAllSaved(page, 5);
      await page.screenshot(screenshotPath(`${engine}-reload-mid-transfer.png`));
      assert.deepEqual((await attempts(page)).map((a) => a.id).sort(), before, "and they are the ones that finish");
      const media = await hostMedia(server, ev);
      assert.equal(media.length, 5, "exactly 5 media records");
      assert.deepEqual(media.map((m) => m.attempt_id).sort(), before);
    } finally {
      await close();
    }
  });
}
