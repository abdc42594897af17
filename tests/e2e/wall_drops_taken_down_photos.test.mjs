// A photo the host takes off the wall leaves a wall that is already showing
// it (the cursor only brings new approvals; the wall re-reads the approved
// set), and comes back when the host approves it again.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, photos, until } from "./harness.mjs";
import { launch, wallIds, uploadAndShowOnWall } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("wall-takedown"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

async function moderate(ev, id, decision) {
  const res = await fetch(`${server.base}/v1/media/${id}/moderation`, {
    method: "POST",
    headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
    body: JSON.stringify({ decision, reason: decision === "reject" ? "not for the wall" : undefined }),
  });
  assert.equal(res.status, 200, await res.text());
}

test("a photo taken off the wall disappears from a wall showing it", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const { context, media, wall } = await uploadAndShowOnWall(browser, server, ev, photos(2, 50_000));

  const [down, up] = media.map((m) => m.id);
  await moderate(ev, down, "reject");
  await until("the taken-down photo to leave the wall", async () => {
    const ids = await wallIds(wall);
    return ids.length === 1 && ids[0] === up;
  }, 10_000);

  await moderate(ev, down, "approve");
  await until("the photo to come back once approved again", async () => (await wallIds(wall)).length === 2, 10_000);
  assert.deepEqual(await wallIds(wall), [down, up].sort());
  await context.close();
});
