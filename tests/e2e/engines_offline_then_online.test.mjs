// Going offline mid-upload, then back online, in Firefox and WebKit
// (Chromium runs it in offline_then_online.test.mjs). The uplink is slowed
// and then cut by a throttling proxy, the same in every engine; where the
// driver can also switch the browser offline (Firefox: playwright's
// setOffline over BiDi) the page sees navigator.onLine go false and shows
// its banner. WebKit over plain WebDriver has no such switch: there the cut
// is a network that stops answering (navigator.onLine stays true).
import { test } from "node:test";
import assert from "node:assert/strict";
import { hostMedia, photos, until } from "./harness.mjs";
import { skipUnless, openThrottledGuest, pick, attempts, untilAllSaved, offlineBanner } from "./engines.mjs";

for (const engine of ["firefox", "webkit"]) {
  test(`${engine}: an upload interrupted by going offline completes after coming back`, { skip: skipUnless(engine) }, async () => {
    const { proxy, server, ev, page, close } = await openThrottledGuest(engine, `offline-${engine}`, 300_000);
    try {
      await pick(page, photos(3, 600_000));
      await until("a transfer to start", async () => (await attempts(page)).some((a) => a.transfer === "uploading" && a.bytesSent > 0), 30_000, 50);

      proxy.setOffline(true);
      if (page.canGoOffline) {
        await page.setOffline(true);
        await until("the offline banner", () => offlineBanner(page), 10_000, 100);
      }
      // The cut transfer comes back as a network error, and the attempt waits.
      const offline = await until("the interrupted transfer to be handled", async () => {
        const list = await attempts(page);
        return list.some((a) => a.error?.code === "network") && list.every((a) => a.transfer !== "uploading") && list;
      }, 30_000, 50);
      assert.ok(offline.some((a) => a.confirmation !== "confirmed"), "something was left to do while offline");
      assert.ok(offline.every((a) => a.transfer !== "failed"), `going offline is not a failure: ${JSON.stringify(offline)}`);
      // (The connections are cut a moment before the browser goes offline, so
      // the cut may be counted as a retry before the attempts pause.)
      if (page.canGoOffline) assert.ok(offline.every((a) => a.terminal || a.offline), `they wait for the network: ${JSON.stringify(offline)}`);

      proxy.setRate(null);
      proxy.setOffline(false);
      if (page.canGoOffline) await page.setOffline(false);
      await untilAllSaved(page, 3);
      if (page.canGoOffline) assert.equal(await offlineBanner(page), false, "the banner goes away");
      const media = await hostMedia(server, ev);
      assert.equal(media.length, 3);
      assert.deepEqual(media.map((m) => m.attempt_id).sort(), (await attempts(page)).map((a) => a.id).sort(), "each attempt stored once");
    } finally {
      await close();
    }
  });
}
