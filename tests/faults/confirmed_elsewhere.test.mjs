// Moment 5: while the page was closed, the attempt was confirmed from another
// tab or device. [restore shows it confirmed; nothing is sent again]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { photo } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, attempts, untilSettled, rowsByAttempt, until, nonEmpty, sessionToken } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m5"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });


test("restore after a confirm made elsewhere shows it confirmed and sends nothing", async () => {
  let { ev, context, page } = await openFreshGuest(stack, browser, { method: "PUT", path: "/storage/*", probability: 1, action: { kind: "drop_before" } });
  const bytes = photo(5, 25_000);
  await pick(page, [{ name: "elsewhere.png", mimeType: "image/png", buffer: bytes }]);
  const [a] = await until("the attempt to be authorized", async () => nonEmpty((await attempts(page)).filter((x) => x.objectKey)));
  const token = await sessionToken(page, ev.event.slug);
  await page.close();

  // The other device: same session, same attempt id, straight to the server.
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const renewed = await (await fetch(`${stack.server.base}/v1/attempts/${a.id}/renew`, { method: "POST", headers: auth, body: "{}" })).json();
  const put = await fetch(renewed.upload.url.replace(stack.base, stack.server.base), { method: "PUT", headers: renewed.upload.headers, body: bytes });
  assert.equal(put.status, 200);
  const confirmed = await fetch(`${stack.server.base}/v1/attempts/${a.id}/confirm`, {
    method: "POST", headers: { ...auth, "idempotency-key": a.id }, body: JSON.stringify({ size: bytes.length, content_type: "image/png" }),
  });
  assert.equal(confirmed.status, 200);
  const media = await confirmed.json();

  await stack.proxy.reset();
  page = await openGuest(context, stack.guestUrl(ev));
  const [b] = await untilSettled(page, 1);
  assert.equal(b.id, a.id);
  assert.equal(b.confirmation, "confirmed");
  assert.equal(b.media.id, media.id);
  assert.equal((await stack.proxy.forwarded("PUT", () => true)).length, 0, "nothing re-sent");
  assert.equal((await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"))).length, 0, "no confirm either");
  assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 1);
  await context.close();
});
