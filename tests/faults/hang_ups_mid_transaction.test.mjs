// Hang-ups: pages that go away while the server is inside a transaction
// (a confirm holds its attempt's row lock while it records the media; the
// test hook holds it there 300 ms), many times, with two guests
// uploading at once.
// [every photo is stored exactly once; the database keeps taking writes:
//  afterwards a new guest's upload is authorized and confirmed on the first try]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createEvent } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, untilSettled, rowsByAttempt, photos } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("hang-ups"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("requests hung up mid-transaction, many times, leave the database taking writes", async () => {
  await stack.proxy.reset();
  await stack.proxy.seed(18);
  const ev = await createEvent(stack.server);
  await stack.hold(300);
  await stack.proxy.rules(
    { method: "POST", path: "/v1/attempts/*/confirm", probability: 0.6, times: 30, action: { kind: "hang_up", after_ms: 40, jitter_ms: 200 } },
    { method: "POST", path: "/v1/events/*/attempts", probability: 0.4, times: 15, action: { kind: "hang_up", after_ms: 0, jitter_ms: 15 } },
  );
  const guests = await Promise.all([0, 1].map(async (g) => {
    const context = await browser.newContext();
    const page = await openGuest(context, stack.guestUrl(ev));
    await pick(page, photos(10, 30_000, `guest${g}-`));
    return { context, page };
  }));
  const settled = (await Promise.all(guests.map(({ page }) => untilSettled(page, 10, 120_000)))).flat();
  assert.ok(settled.every((a) => a.confirmation === "confirmed"), JSON.stringify(settled.filter((a) => a.confirmation !== "confirmed")));

  const { faults, requests } = await stack.proxy.log();
  const hungUp = requests.filter((r) => r.fault?.includes("hang_up"));
  const inFlight = hungUp.filter((r) => r.status === null && r.path.endsWith("/confirm"));
  assert.ok(faults.length >= 10, `many hang-ups (${faults.length})`);
  assert.ok(inFlight.length >= 5, `confirms hung up while the server was still inside them (${inFlight.length})`);

  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 20, "each photo stored once");
  assert.ok(settled.every((a) => rows.get(a.id) === 1));
  for (const { context } of guests) await context.close();

  // Quiet network: a new guest's upload goes through on its first try.
  await stack.proxy.reset();
  await stack.hold(0);
  assert.equal((await fetch(`${stack.server.base}/readyz`)).status, 200, "the database takes writes");
  const context = await browser.newContext();
  const page = await openGuest(context, stack.guestUrl(ev));
  await pick(page, photos(1, 30_000, "after-"));
  const [a] = await untilSettled(page, 1);
  assert.equal(a.confirmation, "confirmed");
  const authorizes = await stack.proxy.forwarded("POST", (p) => p.endsWith("/attempts"));
  const confirms = await stack.proxy.forwarded("POST", (p) => p === `/v1/attempts/${a.id}/confirm`);
  assert.deepEqual(authorizes.map((r) => r.status), [201], "one authorize, answered");
  assert.deepEqual(confirms.map((r) => r.status), [200], "one confirm, answered");
  await context.close();
});
