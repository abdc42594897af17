// Moment 6: the sweeper runs while a confirm is in flight (held inside its
// transaction, past the attempt's expiry).
// [either confirmed with its object kept, or expired with no row — never a row without its object]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createEvent } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, attempts, untilSettled, rowsByAttempt, photos, until } from "./stack.mjs";

let stack, browser;
before(async () => {
  stack = await startStack("m6", { serverArgs: ["--attempt-ttl", "4s", "--url-ttl", "2s", "--sweep-interval", "1h"] });
  browser = await launch();
});
after(async () => { await browser?.close(); await stack?.stop(); });

test("a sweep during a held confirm never leaves a media row without its object", async () => {
  await stack.proxy.reset();
  const ev = await createEvent(stack.server);
  const context = await browser.newContext();
  const page = await openGuest(context, stack.guestUrl(ev));
  await stack.hold(5000);
  await pick(page, photos(1, 20_000));
  await until("the confirm to be in flight", async () => {
    const { requests } = await stack.proxy.log();
    return requests.some((r) => r.path.endsWith("/confirm"));
  }, 20_000, 20).catch(() => {});
  // The attempt's 4 s run out while the confirm is held; the sweeper runs.
  await sleep(4200);
  const report = await stack.sweep();
  await stack.hold(0);
  const [a] = await untilSettled(page, 1, 60_000);
  const { media } = await rowsByAttempt(stack.server, ev);
  const object = join(stack.server.dataDir, "objects", a.objectKey);
  if (a.confirmation === "confirmed") {
    assert.equal(media.length, 1);
    assert.ok(existsSync(object), "the confirmed attempt's object is kept");
    assert.equal(report.expired, 0);
  } else {
    assert.equal(a.confirmation, "expired");
    assert.equal(media.length, 0, "expired: no row");
  }
  for (const m of media) assert.ok(existsSync(join(stack.server.dataDir, "objects", m.object_key)), "every row has its object");
  await context.close();
});
