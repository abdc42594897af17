// Moment 3: the signed URL expired.
// (a) before the PUT, object absent [renew, upload, confirm; one row];
// (b) the object is already stored [confirm only, no second PUT].
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { launch, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, untilSettled, rowsByAttempt, photos } from "./stack.mjs";

let stack, browser;
// Signed URLs live 2 s here.
before(async () => { stack = await startStack("m3", { serverArgs: ["--url-ttl", "2s"] }); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("a URL that expired before the PUT is renewed, then the upload completes", async () => {
  const { ev, context, page } = await openFreshGuest(stack, browser, { method: "PUT", path: "/storage/*", nth: 1, action: { kind: "delay", ms: 3000 } });
  await pick(page, photos(1, 30_000));
  const [a] = await untilSettled(page, 1);
  assert.equal(a.confirmation, "confirmed");
  const puts = await stack.proxy.forwarded("PUT", () => true);
  assert.deepEqual(puts.map((p) => p.status), [403, 200], "refused as expired, then stored");
  assert.equal((await stack.proxy.forwarded("POST", (p) => p.endsWith("/renew"))).length, 1, "one renew");
  assert.equal((await stack.proxy.forwarded("POST", (p) => p.endsWith("/attempts"))).length, 1, "no new attempt");
  assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 1);
  await context.close();
});

test("an expired URL whose object is already stored leads to confirm only", async () => {
  const { ev, context, page } = await openFreshGuest(
    stack, browser,
    // Stored, but the answer is lost…
    { method: "PUT", path: "/storage/*", nth: 1, action: { kind: "drop_after" } },
    // …and by the time the client asks, the URL has expired.
    { method: "POST", path: "/v1/attempts/status", nth: 1, action: { kind: "delay", ms: 2500 } },
  );
  await pick(page, photos(1, 30_000));
  const [a] = await untilSettled(page, 1);
  assert.equal(a.confirmation, "confirmed");
  assert.equal((await stack.proxy.forwarded("PUT", () => true)).length, 1, "no second PUT");
  assert.equal((await stack.proxy.forwarded("POST", (p) => p.endsWith("/renew"))).length, 0, "no renew needed");
  assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 1);
  await context.close();
});
