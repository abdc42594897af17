// Moment 12: the server answers 429 with Retry-After: 3.
// [the client waits at least 3 s, then succeeds]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { launch, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, untilSettled, rowsByAttempt, photos } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m12"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("a 429 with Retry-After: 3 is honoured", async () => {
  const { ev, context, page } = await openFreshGuest(stack, browser, { method: "POST", path: "/v1/events/*/attempts", nth: 1, action: { kind: "status", status: 429, retry_after: "3" } });
  await pick(page, photos(1, 20_000));
  const [a] = await untilSettled(page, 1, 30_000);
  assert.equal(a.confirmation, "confirmed");
  const authorizes = (await stack.proxy.log()).requests.filter((r) => r.method === "POST" && r.path.endsWith("/attempts"));
  assert.equal(authorizes.length, 2);
  assert.equal(authorizes[0].status, 429);
  const waited = authorizes[1].at_ms - authorizes[0].done_ms;
  assert.ok(waited >= 3000, `waited ${waited} ms`);
  assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 1);
  await context.close();
});
