// Moment 6: the sweeper runs while a confirm is in flight (held inside its
// transaction, past the attempt's expiry).
// [either confirmed with its object kept, or expired with no row — never a row without its object]
//
// Here the confirm gets in first: it passes its expiry check before the
// attempt's 5 s are up, then it is held (the server's test hooks) inside
// its transaction, where it would assemble parts, while the expiry passes. The sweep is sent
// then, and the test checks that the fault happened as described: the
// confirm is still at the server when the sweep is sent and is answered
// only after it; the attempt was due for sweeping. The sweeper waits for
// the confirm's lock, re-reads the attempt under it and leaves the confirmed
// attempt and its object alone.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { launch, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, untilSettled, rowsByAttempt, photos, until, nonEmpty } from "./stack.mjs";

// The confirm is held HOLD_MS after its expiry check, a moment after the
// authorize: past the attempt's TTL, and then less than the 5 s a write
// (the sweeper's) waits for a lock before it gives up.
const TTL_S = 5;
const HOLD_MS = 7000;

let stack, browser;
before(async () => {
  stack = await startStack("m6", { serverArgs: ["--attempt-ttl", `${TTL_S}s`, "--url-ttl", "2s", "--sweep-interval", "1h"] });
  browser = await launch();
});
after(async () => { await browser?.close(); await stack?.stop(); });

const isConfirm = (r) => r.method === "POST" && r.path.endsWith("/confirm");

test("a sweep during a held confirm never leaves a media row without its object", async () => {
  const { ev, context, page } = await openFreshGuest(stack, browser);
  await stack.hold(HOLD_MS);
  const authorized = page.waitForResponse((r) => r.request().method() === "POST" && /\/v1\/events\/[^/]+\/attempts$/.test(new URL(r.url()).pathname));
  await pick(page, photos(1, 20_000));
  const attempt = await (await authorized).json();
  const expiresAt = Date.parse(attempt.expires_at);
  assert.ok(Number.isFinite(expiresAt), `the attempt's expiry: ${JSON.stringify(attempt)}`);

  const [held] = await until("the confirm to be at the server", async () => nonEmpty((await stack.proxy.inFlight()).filter(isConfirm)), 20_000, 20);
  assert.ok(held.at_ms < expiresAt, `the confirm reached the server before the attempt expired (${expiresAt - held.at_ms} ms before)`);

  // The attempt's expiry passes while the confirm is held.
  await until("the attempt's expiry to pass", () => Date.now() > expiresAt, TTL_S * 1000 + 5_000, 10);
  assert.ok((await stack.proxy.inFlight()).some((r) => r.id === held.id), "the confirm is still held when the attempt is due");
  const sweptAt = Date.now();
  const report = await stack.sweep();
  await stack.hold(0);

  // The confirm was answered only after the sweep began: the sweep ran
  // while the confirm held the attempt.
  const [confirmed] = await until("the held confirm's answer", async () => {
    const { requests } = await stack.proxy.log();
    return nonEmpty(requests.filter((r) => r.id === held.id));
  }, 20_000, 20);
  assert.ok(confirmed.done_ms > sweptAt, `the confirm was answered ${confirmed.done_ms - sweptAt} ms after the sweep was sent`);
  assert.equal(confirmed.status, 200, "the confirm that got in first wins");

  const [a] = await untilSettled(page, 1, 60_000);
  assert.equal(a.id, attempt.id);
  assert.equal(a.confirmation, "confirmed");
  assert.equal(report.expired, 0, "the sweeper leaves the confirmed attempt alone");
  const { media } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.ok(existsSync(join(stack.server.dataDir, "objects", a.objectKey)), "the confirmed attempt's object is kept");
  for (const m of media) assert.ok(existsSync(join(stack.server.dataDir, "objects", m.object_key)), "every row has its object");
  await context.close();
});
