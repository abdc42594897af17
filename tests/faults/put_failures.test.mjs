// Moment 7: PUT failures.
// (a) the body is cut mid-way [retried; object complete; one row];
// (b) the PUT is stored but its answer is dropped [no duplicate object or row].
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { createEvent, photo } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, openFreshGuest, untilSettled, rowsByAttempt } from "./stack.mjs";

let stack, browser;
before(async () => { stack = await startStack("m7"); browser = await launch(); });
after(async () => { await browser?.close(); await stack?.stop(); });

function storedObjects(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith(".")) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      // Not the renditions the server makes of a photo (`<key>-display`, `<key>-thumb`).
      else if (!e.name.endsWith(".meta") && !/-(display|thumb)$/.test(e.name)) out.push(p);
    }
  };
  walk(join(dir, "objects"));
  return out;
}

test("a PUT cut mid-way is sent again and the object is complete", async () => {
  const { ev, context, page } = await openFreshGuest(stack, browser, { method: "PUT", path: "/storage/*", nth: 1, action: { kind: "cut_body", after_bytes: 100_000 } });
  const bytes = photo(9, 400_000);
  await pick(page, [{ name: "cut.png", mimeType: "image/png", buffer: bytes }]);
  const [a] = await untilSettled(page, 1);
  assert.equal(a.confirmation, "confirmed");
  assert.equal((await stack.proxy.forwarded("PUT", () => true)).length, 2, "sent twice");
  const { media } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.equal(media[0].size, bytes.length, "the stored object is complete");
  assert.equal(statSync(join(stack.server.dataDir, "objects", a.objectKey)).size, bytes.length);
  await context.close();
});

test("a PUT stored whose answer was dropped is not stored twice", async () => {
  await stack.proxy.reset();
  const ev = await createEvent(stack.server);
  const before = storedObjects(stack.server.dataDir).length;
  await stack.proxy.rules({ method: "PUT", path: "/storage/*", nth: 1, action: { kind: "drop_after" } });
  const context = await browser.newContext();
  const page = await openGuest(context, stack.guestUrl(ev));
  await pick(page, [{ name: "dropped.png", mimeType: "image/png", buffer: photo(11, 120_000) }]);
  const [a] = await untilSettled(page, 1);
  assert.equal(a.confirmation, "confirmed");
  assert.equal((await stack.proxy.forwarded("PUT", () => true)).length, 1, "the status check said stored: no second PUT");
  assert.equal(storedObjects(stack.server.dataDir).length - before, 1, "one object");
  assert.equal((await rowsByAttempt(stack.server, ev)).media.length, 1, "one row");
  await context.close();
});
