// Moment 8: the server is killed with SIGKILL during a confirm, then
// restarted. [zero or one row; after the client's retry, exactly one]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createEvent } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, untilSettled, rowsByAttempt, photos, until } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m8"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("a confirm cut short by SIGKILL ends with exactly one media row", async () => {
  await stack.proxy.reset();
  const ev = await createEvent(stack.server);
  const context = await browser.newContext();
  const page = await openGuest(context, stack.guestUrl(ev));
  await stack.hold(3000);
  await pick(page, photos(1, 30_000));
  await until("the confirm to reach the server", async () => {
    const { requests } = await stack.proxy.log();
    return requests.some((r) => r.path.endsWith("/confirm"));
  }, 20_000, 10).catch(() => {});
  await sleep(300);
  await stack.server.restart("SIGKILL");
  const { media: afterRestart } = await rowsByAttempt(stack.server, ev);
  assert.ok(afterRestart.length <= 1, `zero or one row after the crash, found ${afterRestart.length}`);
  const [a] = await untilSettled(page, 1, 90_000);
  assert.equal(a.confirmation, "confirmed");
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.equal(rows.get(a.id), 1);
  await context.close();
});
