// Moment 4: the stored object's type differs from the authorization (a store
// that did not enforce the signed type).
// [422, rejected, shown to the user, no row, not retried]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { photo } from "../e2e/harness.mjs";
import { launch, pick, cards } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, attempts, untilSettled, rowsByAttempt, until, nonEmpty } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m4"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

test("a stored object of another type is rejected, shown, and never retried", async () => {
  // The browser's own PUTs never arrive; another writer stores a GIF instead.
  const { ev, context, page } = await openFreshGuest(stack, browser, { method: "PUT", path: "/storage/*", probability: 1, action: { kind: "drop_before" } });
  const bytes = photo(3, 20_000);
  await pick(page, [{ name: "odd.png", mimeType: "image/png", buffer: bytes }]);
  const [a] = await until("the attempt to be authorized", async () => nonEmpty((await attempts(page)).filter((x) => x.objectKey)));
  const file = join(stack.server.dataDir, "objects", a.objectKey);
  mkdirSync(dirname(file), { recursive: true });
  const sha = createHash("sha256").update(bytes).digest("hex");
  writeFileSync(`${file}.meta`, JSON.stringify({ size: bytes.length, content_type: "image/gif", sha256: sha }));
  writeFileSync(file, bytes);
  const [done] = await untilSettled(page, 1);
  assert.equal(done.confirmation, "rejected");
  assert.equal(done.error.code, "type_mismatch");
  const [card] = await cards(page);
  assert.match(`${card.confirmation} ${card.error}`, /image\/gif|type/i, "the guest sees why");
  assert.equal((await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"))).length, 1, "one confirm, not retried");
  assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 0, "no media row");
  // Nothing is scheduled for it: terminal, no retry pending.
  assert.equal(done.terminal, true);
  assert.equal(done.nextRetryAt, null, "no retry is scheduled");

  // A reload restores it as it is (rejected, for good), and a new photo goes
  // all the way through while the rejected one is never sent again.
  await stack.proxy.clearRules();
  await page.reload();
  await page.waitForSelector("body[data-ready='1']");
  const [restored] = await attempts(page);
  assert.equal(restored.id, done.id);
  assert.equal(restored.confirmation, "rejected", "rejected for good after a reload");
  assert.equal(restored.terminal, true);
  await pick(page, [{ name: "next.png", mimeType: "image/png", buffer: photo(4, 20_000) }]);
  const next = await until("the next photo to be confirmed", async () => {
    const list = await attempts(page);
    return list.find((x) => x.id !== done.id && x.confirmation === "confirmed");
  }, 60_000);
  const confirms = (await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"))).map((r) => r.path);
  assert.deepEqual(confirms, [`/v1/attempts/${done.id}/confirm`, `/v1/attempts/${next.id}/confirm`], "the rejected attempt's one confirm, then the next photo's");
  await context.close();
});
