// The guest pauses a transfer part-way (the card's Pause button, which
// calls uploader.pause): the PUT is aborted and nothing is stored, the pause
// survives a reload (the restored page asks the server and still sends
// nothing), and Resume stores the file once. One 12 MB file over a 1 MB/s uplink (the throttling proxy), so the
// transfer is still under way when it is paused, in each engine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { hostMedia, photos, until } from "./harness.mjs";
import { skipUnless, openThrottledGuest, untilReady, pick, attempts, untilAllSaved } from "./engines.mjs";

/** Waits until the one attempt is paused, not sending, and the page idle. */
function untilPausedAndIdle(page, what) {
  return until(what, async () => {
    const [a] = await attempts(page);
    const idle = await page.evaluate(() => window.uploader.idle);
    return a && a.paused && a.transfer === "queued" && !a.terminal && a.error === null && idle && a;
  }, 30_000, 100);
}

for (const engine of ["chromium", "firefox", "webkit"]) {
  test(`${engine}: a paused transfer sends nothing, stays paused after a reload, and goes up once on resume`, { skip: skipUnless(engine) }, async () => {
    const { proxy, server, ev, page, close } = await openThrottledGuest(engine, `pause-${engine}`, 1_000_000);
    try {
      await pick(page, photos(1, 12_000_000));
      const [started] = await until("the transfer part-way", async () => {
        const list = await attempts(page);
        return list.length === 1 && list[0].transfer === "uploading" && list[0].bytesSent > 0 && list;
      }, 30_000, 50);

      // The guest presses the card's Pause button.
      await page.evaluate(() => document.querySelector("[data-testid='card'] [data-testid='pause']").click());
      const paused = await untilPausedAndIdle(page, "the pause to abort the transfer");
      assert.equal(paused.retries, 0, "an abort by the guest is not a failure");
      assert.equal((await hostMedia(server, ev)).length, 0);

      // The pause is the guest's decision: a reload keeps it.
      await page.reload();
      await untilReady(page);
      await untilPausedAndIdle(page, "the restored page to keep the pause");
      assert.equal((await hostMedia(server, ev)).length, 0, "nothing stored while paused");

      proxy.setRate(null);
      await until("the card to offer Resume", () => page.evaluate(() => !!document.querySelector("[data-testid='card'] [data-testid='resume']")), 10_000, 100);
      await page.evaluate(() => document.querySelector("[data-testid='card'] [data-testid='resume']").click());
      await untilAllSaved(page, 1);
      assert.equal((await hostMedia(server, ev)).length, 1, "stored once");
      const [done] = await attempts(page);
      assert.equal(done.id, started.id, "the same attempt");
      assert.equal(done.paused, false);
    } finally {
      await close();
    }
  });
}
