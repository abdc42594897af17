// A large video goes up in parts; the page is reloaded while one part's PUT
// is still on its way to the store, which finishes it after the page has
// asked the server what it holds (the test releases it once the restore is
// over: an event, not a timer). The video is too large to be kept for a
// reload, so the guest picks it again: the re-pick asks the server which
// parts it holds first, so the part stored meanwhile is not sent again.
// [each part stored once; one media row; the object whole]
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEvent } from "../e2e/harness.mjs";
import { launch, openGuest, pick } from "../e2e/pages.mjs";
import { startStack, attempts, attemptStatus, until, rowsByAttempt } from "./stack.mjs";

const MIB = 1 << 20;
// Over the 64 MiB a page keeps for a reload: after it, the guest picks it again.
const SIZE = 72 * MIB;
const PARTS = Math.ceil(SIZE / (5 * MIB));
const DELAY_MS = 12_000;

let stack, browser, dir;
before(async () => {
  stack = await startStack("late-part", { serverArgs: ["--multipart-threshold", "8MiB", "--part-size", "5MiB"] });
  browser = await launch();
  dir = mkdtempSync(join(tmpdir(), "upload-once-late-part-"));
});
after(async () => {
  await browser?.close();
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("a part the store finished during the reload is not sent again after the file is picked again", async () => {
  const ev = await createEvent(stack.server, { moderation: "none", maxFileBytes: 1 << 30 });
  const path = join(dir, "first-dance.mp4");
  const bytes = Buffer.alloc(SIZE);
  for (let i = 0; i < SIZE; i += 4096) bytes.fill((i / 4096) % 251, i, Math.min(i + 4096, SIZE));
  writeFileSync(path, bytes);

  await stack.proxy.reset();
  await stack.proxy.rules(
    // The fourth part reaches the store only when the test releases it,
    // after its page is gone and the next one has asked what is stored.
    { method: "PUT", path: "/storage/*", nth: 4, action: { kind: "store_late" } },
    // The page's own question about it waits until the page is reloaded.
    { method: "POST", path: "/v1/attempts/status", action: { kind: "delay", ms: DELAY_MS } },
  );
  const context = await browser.newContext();
  const page = await openGuest(context, stack.guestUrl(ev));
  await pick(page, path);
  // Its whole body at the proxy (it reaches the store whatever the page
  // does now), then the page goes away.
  await until("the fourth part's body to be held", async () => (await stack.proxy.log()).held.length >= 1, 60_000, 20);
  const [{ id }] = await attempts(page);
  const reloaded = Date.now();
  await page.reload();
  await stack.proxy.clearRules();
  await page.waitForSelector("body[data-ready='1']");
  await until("the attempt to wait for its file", async () => {
    const list = await attempts(page);
    return list.length === 1 && list[0].transfer === "needs_file" && list;
  }, 30_000);

  // The restore's question is answered (the server did not hold the part).
  await until("the restore to ask what is stored", async () => {
    const { requests } = await stack.proxy.log();
    return requests.some((r) => r.method === "POST" && r.path === "/v1/attempts/status" && r.at_ms >= reloaded && r.status === 200);
  }, 30_000, 50);
  // The store finishes the part now, after the restore asked about it.
  await stack.proxy.release();
  const late = await until("the late part to be stored", async () => {
    const { requests } = await stack.proxy.log();
    return requests.find((r) => r.fault?.includes("store_late") && r.status !== null) ?? null;
  }, 30_000, 50);
  assert.equal(late.status, 200, "the late part was stored");

  const part = (r) => Number(new URLSearchParams(r.query).get("part"));
  const latePart = part(late);
  const held = await attemptStatus(stack.server, page, ev, id);
  assert.ok(held.parts.some((p) => p.number === latePart), `the server holds part ${latePart} now: ${JSON.stringify(held.parts)}`);
  const ledger = (await attempts(page))[0];
  assert.ok(ledger.partsDone < held.parts.length, "the page did not know of it: only the re-pick's question can tell it");

  const picked = Date.now();
  await pick(page, path);
  const [saved] = await until("the video to be saved", async () => {
    const list = await attempts(page);
    return list.length === 1 && list[0].confirmation === "confirmed" && list;
  }, 120_000, 100);
  assert.equal(saved.id, id, "the same attempt");
  const after = (await stack.proxy.log()).requests.filter((r) => r.method === "PUT" && r.forwarded && r.at_ms >= picked);
  const sentAgain = after.filter((r) => held.parts.some((p) => p.number === part(r)));
  assert.deepEqual(sentAgain.map(part), [], `no part the server held was sent again (late part ${latePart})`);
  assert.equal(after.filter((r) => r.status === 200).length, PARTS - held.parts.length, "only the missing parts");
  const { media, rows } = await rowsByAttempt(stack.server, ev);
  assert.equal(media.length, 1);
  assert.equal(rows.get(id), 1);
  assert.equal(media[0].size, SIZE, "the object is whole");
  await context.close();
});
