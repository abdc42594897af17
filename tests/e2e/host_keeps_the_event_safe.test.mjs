// The host keeps the event safe from the host page (issue 15): a new guest
// code (the invitation follows; the old code no longer joins, a guest
// already in keeps uploading), a new host link (the page goes on with it and
// puts it in its address; the old token is refused), and deleting the event
// (the page says so; the guest link, the host link and the wall answer no
// more). Each asks first: a dismissed question changes nothing.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, guestUrl, hostUrl, photos } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-safety"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** Joining the event with `code`: the status the server answers. */
async function join(ev, code) {
  const r = await fetch(`${server.base}/v1/events/${ev.event.slug}/sessions`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ guest_code: code }),
  });
  return r.status;
}

/** The host's media list with `token`: the status. */
async function hostList(ev, token) {
  return (await fetch(`${server.base}/v1/events/${ev.event.slug}/media`, { headers: { authorization: `Bearer ${token}` } })).status;
}

test("the host replaces the guest code and the host link, then deletes the event, each after saying yes", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // A guest who joined with the code the host is about to replace.
  const guest = await openGuest(context, guestUrl(server, ev));
  const host = await context.newPage();
  await host.goto(hostUrl(server, ev));
  await host.waitForSelector("body[data-ready='1'][data-invite='shown']");
  const oldLink = await host.textContent("[data-testid='guest-link']");
  assert.ok(oldLink.includes(`code=${ev.guest_code}`), oldLink);

  // Dismissed: nothing changes.
  host.once("dialog", (d) => d.dismiss());
  await host.click("[data-testid='rotate-guest-code']");
  assert.equal(await join(ev, ev.guest_code), 201, "the code still joins after a dismissed question");

  // A new guest code: the invitation shows it, the old one no longer joins.
  host.once("dialog", (d) => d.accept());
  await host.click("[data-testid='rotate-guest-code']");
  await host.waitForSelector("body[data-rotated='guest_code']");
  await host.waitForFunction((old) => document.querySelector("[data-testid='guest-link']").textContent !== old, oldLink);
  const newLink = await host.textContent("[data-testid='guest-link']");
  const newCode = new URL(newLink).searchParams.get("code");
  assert.ok(newCode && newCode !== ev.guest_code, newLink);
  assert.equal(await join(ev, ev.guest_code), 403, "the old code no longer joins");
  assert.equal(await join(ev, newCode), 201, "the new one does");
  // The guest already in keeps uploading.
  await pick(guest, photos(1, 50_000, "safe"));
  await untilAllSaved(guest, 1);

  // A new host link: the page goes on with it, the old token is refused.
  host.once("dialog", (d) => d.accept());
  await host.click("[data-testid='rotate-host-token']");
  await host.waitForSelector("body[data-rotated='host_token']");
  const token = new URLSearchParams(new URL(host.url()).hash.slice(1)).get("token");
  assert.ok(token && token !== ev.host_token, host.url());
  assert.ok((await host.textContent("[data-testid='safety-result']")).includes(host.url()), "the new link is shown to keep");
  assert.equal(await hostList(ev, ev.host_token), 403, "the old host token is refused");
  assert.equal(await hostList(ev, token), 200);
  // The new link opens the host page, which lists the guest's photo
  // (approved: the event has no moderation).
  await host.reload();
  await host.waitForSelector("body[data-ready='1']");
  await host.click("[data-filter='all']");
  await host.waitForSelector("[data-testid='media-item']");

  // Deleting the event: asked first, then everything answers no more.
  host.once("dialog", (d) => d.dismiss());
  await host.click("[data-testid='delete-event']");
  assert.equal(await hostList(ev, token), 200, "a dismissed question deletes nothing");
  host.once("dialog", (d) => d.accept());
  await host.click("[data-testid='delete-event']");
  await host.waitForSelector("body[data-deleted='yes']");
  assert.equal(await hostList(ev, token), 404, "the event is gone");
  assert.equal(await join(ev, newCode), 404, "and no guest joins it");
  await context.close();
});
