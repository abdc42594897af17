// Large files go up in parts; each ambiguous moment of a part, of the batch
// signing and of the confirm that assembles them is broken on purpose.
// [no part sent twice once stored; one media row; the object whole]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createEvent } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, untilSettled, rowsByAttempt } from "./stack.mjs";

const MIB = 1 << 20;
const SIZE = 11 * MIB;
const PARTS = 3; // 5 + 5 + 1 MiB

let stack, browser;
before(async () => {
  stack = await startStack("parts", { serverArgs: ["--multipart-threshold", "8MiB", "--part-size", "5MiB"] });
  browser = await launch();
});
after(async () => { await browser?.close(); await stack?.stop(); });

function video(seed) {
  const bytes = Buffer.alloc(SIZE);
  for (let i = 0; i < SIZE; i += 4096) bytes.fill((seed * 7 + i / 4096) % 251, i, Math.min(i + 4096, SIZE));
  return [{ name: `clip-${seed}.mp4`, mimeType: "video/mp4", buffer: bytes }];
}

/** Uploads one large video with `rules` in place; the settled attempt and what the proxy saw. */
async function uploadWith(seed, ...rules) {
  await stack.proxy.reset();
  const ev = await createEvent(stack.server, { moderation: "none" });
  if (rules.length) await stack.proxy.rules(...rules);
  const context = await browser.newContext();
  const page = await openGuest(context, stack.guestUrl(ev));
  await pick(page, video(seed));
  const [a] = await untilSettled(page, 1, 120_000);
  const log = await stack.proxy.log();
  await context.close();
  const puts = log.requests.filter((r) => r.method === "PUT" && r.forwarded);
  return { ev, a, log, puts };
}

async function assertStoredOnce(ev, a) {
  assert.equal(a.confirmation, "confirmed");
  assert.equal(a.partCount, PARTS);
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1, "one media row");
  assert.equal(rows.get(a.id), 1);
  assert.equal(media[0].size, SIZE, "the object is whole");
  assert.match(media[0].composite_sha256 ?? "", new RegExp(`^[0-9a-f]{64}-${PARTS}$`));
}

/** The one fault happened, and the request it broke (its path ends in `suffix`) was forwarded again. */
function assertSentAgain(log, suffix, message) {
  assert.equal(log.faults.length, 1);
  const sent = log.requests.filter((r) => r.path.endsWith(suffix) && r.forwarded);
  assert.ok(sent.length >= 2, message);
}

test("a part stored whose answer was dropped is not sent again", async () => {
  const { ev, a, log, puts } = await uploadWith(1, { method: "PUT", path: "/storage/*", nth: 2, action: { kind: "drop_after" } });
  assert.equal(log.faults.length, 1, "the answer of a stored part was dropped");
  assert.equal(puts.length, PARTS, "each part reached the store once: the server's list said the dropped one was stored");
  await assertStoredOnce(ev, a);
});

test("a part cut mid-way is sent again, and only that part", async () => {
  // Whichever part reaches the store first (they go up side by side; the
  // 1 MiB last one may be first) is cut half-way through its first MiB.
  const { ev, a, log, puts } = await uploadWith(2, { method: "PUT", path: "/storage/*", nth: 1, action: { kind: "cut_body", after_bytes: MIB / 2 } });
  assert.equal(log.faults.length, 1);
  const cut = puts.find((r) => r.fault);
  assert.ok(cut && cut.status !== 200, `the cut part was not stored: ${JSON.stringify(cut)}`);
  assert.equal(puts.length, PARTS + 1, "the cut part once more");
  await assertStoredOnce(ev, a);
});

test("a lost answer to the signing of parts is asked again", async () => {
  const { ev, a, log } = await uploadWith(3, { method: "POST", path: "/v1/attempts/*/parts", nth: 1, action: { kind: "drop_after" } });
  assertSentAgain(log, "/parts", "signed again");
  await assertStoredOnce(ev, a);
});

test("the confirm that assembles the parts commits and its answer is lost", async () => {
  const { ev, a, log } = await uploadWith(4, { method: "POST", path: "/v1/attempts/*/confirm", nth: 1, action: { kind: "drop_after" } });
  assertSentAgain(log, "/confirm", "the confirm was sent again");
  await assertStoredOnce(ev, a);
});
