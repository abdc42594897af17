// Moment 1: the confirm commits on the server, and its answer is dropped.
// [a retry, or a restore after a reload, returns the same media; exactly one row]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, attempts, untilSettled, rowsByAttempt, photos } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m1"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("the client retries the confirm with the same id and gets the same media", async () => {
  const { ev, context, page } = await openFreshGuest(stack, browser, { method: "POST", path: "/v1/attempts/*/confirm", nth: 1, action: { kind: "drop_after" } });
  await pick(page, photos(1, 40_000));
  const [a] = await untilSettled(page, 1);
  assert.equal(a.confirmation, "confirmed");
  const confirms = await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"));
  assert.ok(confirms.length >= 2, "the first answer was lost, so the confirm was sent again");
  assert.ok(confirms.every((c) => c.path === `/v1/attempts/${a.id}/confirm`), "always the same attempt id");
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.equal(rows.get(a.id), 1);
  assert.equal(media[0].id, a.media.id, "the page shows the media the server made");
  await context.close();
});

test("after a reload, restore finds the confirm that committed", async () => {
  // The first confirm commits and its answer is lost; every later one is
  // refused before it reaches the server, so only a restore can learn the truth.
  const { ev, context, page } = await openFreshGuest(
    stack, browser,
    { method: "POST", path: "/v1/attempts/*/confirm", nth: 1, action: { kind: "drop_after" } },
    { method: "POST", path: "/v1/attempts/*/confirm", probability: 1, action: { kind: "drop_before" } },
  );
  await pick(page, photos(1, 40_000));
  await until_(async () => (await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"))).length === 1);
  const [before] = await attempts(page);
  assert.notEqual(before.confirmation, "confirmed", "the page did not hear the answer");
  // The reload, as a guest does it: the tab goes (its retries with it, still
  // refused: the rules stay), and the page is opened again. Every request
  // from here on is the new page's.
  await page.close();
  const { requests: earlier } = await stack.proxy.log();
  const since = Math.max(0, ...earlier.map((r) => r.id), ...(await stack.proxy.inFlight()).map((r) => r.id));
  const again = await openGuest(context, stack.guestUrl(ev));
  const [a] = await untilSettled(again, 1);
  assert.equal(a.id, before.id);
  assert.equal(a.confirmation, "confirmed");
  const { requests } = await stack.proxy.log();
  const later = requests.filter((r) => r.id > since);
  assert.ok(later.some((r) => r.path === "/v1/attempts/status"), "the new page asked the server");
  assert.deepEqual(later.filter((r) => r.path.endsWith("/confirm")), [], "no second confirm: the status said confirmed");
  assert.deepEqual(later.filter((r) => r.method === "PUT"), [], "no second upload");
  const { media } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  await context.close();
});

async function until_(fn) {
  for (let i = 0; i < 300; i++) { if (await fn()) return; await new Promise((r) => setTimeout(r, 50)); }
  throw new Error("timed out");
}
