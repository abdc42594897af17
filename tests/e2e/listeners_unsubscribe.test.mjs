// The JS surface: onChange, onRemove and onStorageError each return a
// function that unsubscribes the listener, as DOM and most JS libraries do;
// calling it twice is harmless. `persisted` is a boolean or null.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent } from "./harness.mjs";
import { launch, openGuestInNewContext } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("listeners"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("each subscription returns a function that unsubscribes it", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const { context, page } = await openGuestInNewContext(browser, server, ev);
  const result = await page.evaluate(async () => {
    const u = window.uploader;
    const heard = { change: 0, changeAfterStop: 0, removed: [], removedAfterStop: [] };
    u.onChange(() => heard.change++);
    const stopChange = u.onChange(() => heard.changeAfterStop++);
    u.onRemove((id) => heard.removed.push(id));
    const stopRemove = u.onRemove((id) => heard.removedAfterStop.push(id));
    const stopStorage = u.onStorageError(() => {});
    const types = [typeof stopChange, typeof stopRemove, typeof stopStorage];
    stopChange();
    stopChange();
    stopRemove();
    stopStorage();
    const file = new File([new Uint8Array(2_000)], "listen.png", { type: "image/png", lastModified: 1 });
    const [outcome] = await u.add([file]);
    const id = outcome.attempt.id;
    // Until the attempt is confirmed, as the listener still subscribed hears it.
    await new Promise((resolve) => {
      const confirmed = () => u.get(id)?.confirmation === "confirmed";
      if (confirmed()) return resolve();
      const stop = u.onChange(() => { if (confirmed()) { stop(); resolve(); } });
    });
    await u.forget(id);
    return { types, heard, id, persisted: u.persisted };
  });
  assert.deepEqual(result.types, ["function", "function", "function"]);
  assert.ok(result.heard.change > 0, "the listener still subscribed heard every change");
  assert.equal(result.heard.changeAfterStop, 0, "the one unsubscribed before the add heard none of them");
  assert.deepEqual(result.heard.removed, [result.id], "the remove listener still subscribed heard the forget");
  assert.deepEqual(result.heard.removedAfterStop, [], "the unsubscribed one did not");
  assert.ok(result.persisted === null || typeof result.persisted === "boolean", `persisted is ${result.persisted}`);
  await context.close();
});
