// Moment 8: the server is killed with SIGKILL during a confirm, then
// restarted. [zero or one row; after the client's retry, exactly one]
//
// The confirm is stopped inside its transaction (every confirm is held
// there by the server's test hooks), and the test checks that it is there before
// the kill: the proxy has forwarded it and has no answer yet, and a write
// waits behind its lock until the server gives up on it (`/readyz` answers
// 503 database_unavailable). Killed there, the transaction never commits:
// no row, the attempt still authorized; then the client's own retry makes
// exactly one.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { launch, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, attempts, untilSettled, rowsByAttempt, photos, until, nonEmpty, attemptStatus } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m8"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

const isConfirm = (r) => r.method === "POST" && r.path.endsWith("/confirm");

test("a confirm killed inside its transaction leaves no row; the client's retry makes exactly one", async () => {
  const { ev, context, page } = await openFreshGuest(stack, browser);
  // Far longer than the test needs: the kill ends it.
  await stack.hold(120_000);
  await pick(page, photos(1, 30_000));
  const [held] = await until("the confirm to be at the server", async () => nonEmpty((await stack.proxy.inFlight()).filter(isConfirm)), 30_000, 20);

  // Inside its transaction: a write waits for the confirm's lock, then gives
  // up. (The confirm asks the store before it takes the lock: a write that
  // comes in just before that still goes through, so ask until one waits.)
  const ready = await until("a write to wait behind the held confirm", async () => {
    const r = await fetch(`${stack.server.base}/readyz`, { headers: { authorization: `Bearer ${stack.server.admin}` } });
    return r.status === 503 ? r : (await r.body?.cancel(), null);
  }, 20_000, 50);
  assert.equal((await ready.json()).code, "database_unavailable");
  const inFlight = await stack.proxy.inFlight();
  assert.deepEqual(inFlight.map((r) => `${r.method} ${r.path}`), [`POST ${held.path}`], "only the held confirm is at the server");

  // The client's retries wait at the proxy until the state after the crash is read.
  await stack.proxy.rules({ method: "POST", path: "/v1/attempts/*/confirm", probability: 1, action: { kind: "status", status: 503 } });
  await stack.restartServer("SIGKILL");

  const answered = await until("the proxy to log the killed confirm", async () => {
    const { requests } = await stack.proxy.log();
    return nonEmpty(requests.filter((r) => r.id === held.id));
  }, 10_000, 20);
  assert.equal(answered[0].status, null, "the killed confirm was never answered");
  const { media: afterCrash } = await rowsByAttempt(stack.server, ev);
  assert.equal(afterCrash.length, 0, "the transaction died with the server: no row");
  const [a0] = await attempts(page);
  const status = await attemptStatus(stack.server, page, ev, a0.id);
  assert.equal(status.state, "authorized", `the attempt is still authorized: ${JSON.stringify(status)}`);
  assert.equal(status.object_stored, true);

  await stack.proxy.clearRules();
  const [a] = await untilSettled(page, 1, 90_000);
  assert.equal(a.id, a0.id);
  assert.equal(a.confirmation, "confirmed");
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.equal(rows.get(a.id), 1);
  await context.close();
});
