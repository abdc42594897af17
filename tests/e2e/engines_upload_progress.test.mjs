// Upload progress reaches the page part-way through a transfer, in Firefox
// and WebKit (Chromium: reload_mid_transfer.test.mjs waits for 10–90 %).
// One 12 MB file over a 2 MB/s uplink (the throttling proxy): the browser's
// socket buffers on loopback take the first few megabytes at once, so a
// smaller file would be "sent" before any progress event could show it
// part-way.
import { test } from "node:test";
import assert from "node:assert/strict";
import { hostMedia, photos, until } from "./harness.mjs";
import { skipUnless, openThrottledGuest, pick, attempts, untilAllSaved } from "./engines.mjs";

for (const engine of ["firefox", "webkit"]) {
  test(`${engine}: upload progress shows part-way through a transfer`, { skip: skipUnless(engine) }, async () => {
    const { proxy, server, ev, page, close } = await openThrottledGuest(engine, `progress-${engine}`, 2_000_000);
    try {
      await pick(page, photos(1, 12_000_000));
      const seen = new Set();
      await until("progress part-way", async () => {
        const [a] = await attempts(page);
        if (a && a.transfer === "uploading" && a.bytesSent > 0 && a.bytesSent < a.bytesTotal) seen.add(a.bytesSent);
        return seen.size >= 2;
      }, 30_000, 100);
      assert.ok([...seen].every((n) => n < 12_000_000), "part-way values");
      proxy.setRate(null);
      await untilAllSaved(page, 1);
      assert.equal((await hostMedia(server, ev)).length, 1);
    } finally {
      await close();
    }
  });
}
