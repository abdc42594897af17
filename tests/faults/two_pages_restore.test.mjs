// Moment 10: two pages of one browser context restore the same pending
// attempts. [each attempt uploaded once]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, attempts, untilSettled, rowsByAttempt, photos, until } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m10"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("two pages restoring the same attempts upload each once", async () => {
  // Authorize fails for now: the attempts stay pending (and their files are kept).
  const { ev, context, page: first } = await openFreshGuest(stack, browser, { method: "POST", path: "/v1/events/*/attempts", probability: 1, action: { kind: "status", status: 503 } });
  await pick(first, photos(3, 50_000));
  // Closed once the three files are kept in IndexedDB (add() resolves then),
  // so that both pages restore them without the files being picked again.
  const kept = await until("3 pending attempts with their files kept", async () => {
    const list = await attempts(first);
    return list.length === 3 && list.every((a) => a.fileKept) && list;
  });
  assert.ok(kept.every((a) => a.confirmation === "unconfirmed" && !a.terminal), "still pending when the page closes");
  await first.close();

  await stack.proxy.reset();
  const [a, b] = await Promise.all([openGuest(context, stack.guestUrl(ev)), openGuest(context, stack.guestUrl(ev))]);
  const [listA] = await Promise.all([untilSettled(a, 3), untilSettled(b, 3)]);
  assert.ok(listA.every((x) => x.confirmation === "confirmed"));
  const puts = await stack.proxy.forwarded("PUT", () => true);
  const perObject = new Map();
  for (const p of puts.filter((p) => p.status === 200)) perObject.set(p.path, (perObject.get(p.path) ?? 0) + 1);
  assert.equal(perObject.size, 3);
  assert.deepEqual([...perObject.values()], [1, 1, 1], "each attempt uploaded once");
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 3);
  assert.ok([...rows.values()].every((n) => n === 1));
  await context.close();
});
