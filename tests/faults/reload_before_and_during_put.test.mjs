// Moment 9: the tab is reloaded after authorize but before the PUT, and
// again mid-PUT. [the same attempt id carries on]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { photo } from "../e2e/harness.mjs";
import { launch, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, attempts, untilSettled, rowsByAttempt, until, nonEmpty } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m9"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("the same attempt id carries on through two reloads", async () => {
  // The first PUT waits in the proxy: the reload lands after authorize, before the PUT.
  const { ev, context, page } = await openFreshGuest(stack, browser, { method: "PUT", path: "/storage/*", nth: 1, action: { kind: "delay", ms: 5000 } });
  // A slow uplink from the start, so the upload after the first reload is
  // still running when the second reload comes.
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 10, downloadThroughput: -1, uploadThroughput: 300_000 });
  await pick(page, [{ name: "reload.png", mimeType: "image/png", buffer: photo(13, 1_500_000) }]);
  const [first] = await until("authorize", async () => nonEmpty((await attempts(page)).filter((a) => a.objectKey)));
  await page.reload();
  await page.waitForSelector("body[data-ready='1']");
  const [again] = await attempts(page);
  assert.equal(again.id, first.id, "after the first reload");

  // Now reload in the middle of the transfer.
  await until("a transfer part-way", async () => (await attempts(page)).some((a) => a.transfer === "uploading" && a.bytesSent > 0.1 * a.bytesTotal && a.bytesSent < 0.8 * a.bytesTotal), 60_000, 50);
  await page.reload();
  await page.waitForSelector("body[data-ready='1']");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  const [done] = await untilSettled(page, 1, 90_000);
  assert.equal(done.id, first.id, "after the second reload");
  assert.equal(done.confirmation, "confirmed");
  assert.equal((await stack.proxy.forwarded("POST", (p) => p.endsWith("/attempts"))).length >= 1, true);
  const authorized = new Set((await stack.proxy.log()).requests.filter((r) => r.path.endsWith("/attempts")).map(() => first.id));
  assert.equal(authorized.size, 1);
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.equal(rows.get(first.id), 1);
  await context.close();
});
