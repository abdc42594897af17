// Moment 2: the same confirm twice at once, and a double click on Retry.
// [one row; both callers see the same media]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { launch, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, attempts, untilSettled, rowsByAttempt, photos, until, nonEmpty, sessionToken } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m2"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });


test("two concurrent confirms of one attempt return one media record", async () => {
  // The page uploads but cannot confirm: the attempt waits, bytes stored.
  const { ev, context, page } = await openFreshGuest(stack, browser, { method: "POST", path: "/v1/attempts/*/confirm", probability: 1, action: { kind: "drop_before" } });
  await pick(page, photos(1, 30_000));
  const [a] = await until("the bytes to be stored", async () => nonEmpty((await attempts(page)).filter((x) => x.transfer === "uploaded")));
  const token = await sessionToken(page, ev.event.slug);
  await context.close();
  const confirm = () => fetch(`${stack.server.base}/v1/attempts/${a.id}/confirm`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "idempotency-key": a.id, "content-type": "application/json" },
    body: JSON.stringify({ size: a.size, content_type: a.type }),
  }).then(async (r) => ({ status: r.status, body: await r.json() }));
  const [x, y] = await Promise.all([confirm(), confirm()]);
  assert.equal(x.status, 200);
  assert.equal(y.status, 200);
  assert.equal(x.body.id, y.body.id, "both callers see the same media");
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.equal(rows.get(a.id), 1);
});

test("a double click on Retry retries once", async () => {
  const { ev, context, page } = await openFreshGuest(stack, browser);
  // Hold the upload, cancel it: the card shows a failure with a Retry button.
  await stack.proxy.rules({ method: "PUT", path: "/storage/*", nth: 1, action: { kind: "delay", ms: 1500 } });
  await pick(page, photos(1, 30_000));
  const [a] = await until("the upload to start", async () => nonEmpty((await attempts(page)).filter((x) => x.transfer === "uploading")));
  await page.evaluate((id) => window.uploader.cancel(id), a.id);
  const retry = await page.waitForSelector(`[data-testid='card'][data-id='${a.id}'] [data-testid='retry']`);
  await retry.click({ clickCount: 2, delay: 10 });
  // The retry takes the attempt's lock again before it moves: until then it
  // still shows cancelled. (The second click lands on the button that
  // replaced Retry — Cancel — and must not press it.)
  const [done] = await until("the retried attempt to settle", async () => {
    const list = await attempts(page);
    return list.length === 1 && list[0].terminal && list[0].error?.code !== "cancelled" && list;
  }, 60_000, 100);
  assert.equal(done.id, a.id, "the same attempt");
  assert.equal(done.confirmation, "confirmed");
  const { media } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  const confirms = await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"));
  assert.equal(confirms.length, 1, "one confirm");
  await context.close();
});
