// Limits across instances. The quotas are counted in the database, in the
// transaction that inserts: requests racing on both instances never
// overshoot them. The rate limits are each instance's own (docs/deploy.md
// §3): through nginx's round robin over two instances, one client gets
// twice the rate, and the client is the address nginx reports in
// X-Forwarded-For (so another guest behind the same nginx is not held up).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createEvent } from "../e2e/harness.mjs";
import { startCluster } from "./cluster.mjs";
import { authorize, request, session } from "./client.mjs";

const UNCONFIRMED_PER_SESSION = 5;
const SESSIONS_PER_EVENT = 8;
const WALL_RATE = 10;

let cluster;
before(async () => {
  cluster = await startCluster("limits", {
    serverArgs: [
      "--max-unconfirmed-per-session", String(UNCONFIRMED_PER_SESSION),
      "--max-sessions-per-event-per-hour", String(SESSIONS_PER_EVENT),
      "--rate-wall", `${WALL_RATE}/h`,
    ],
  });
});
after(async () => { await cluster?.stop(); });

/** Each of `n` calls of `make(instance)`, alternating between the two instances, all at once. */
const raceOnBoth = (n, make) => Promise.all(Array.from({ length: n }, (_, k) => make(cluster.instances[k % 2])));

test("the sessions of an event stay within their quota when both instances create them at once", async () => {
  const ev = await createEvent(cluster.api);
  // Half to each instance, directly.
  const answers = await raceOnBoth(20, (instance) => request(instance.base, "POST", `/v1/events/${ev.event.slug}/sessions`, {
    body: { guest_code: ev.guest_code },
  }));
  const made = answers.filter((a) => a.status === 201 || a.status === 200).length;
  assert.equal(made, SESSIONS_PER_EVENT, `sessions made: ${answers.map((a) => a.status).join(" ")}`);
  assert.ok(answers.filter((a) => a.status !== 201 && a.status !== 200).every((a) => a.status === 403 && a.body.code === "too_many_sessions"));
});

test("a session's unconfirmed attempts stay within their quota when both instances authorize at once", async () => {
  const ev = await createEvent(cluster.api);
  const token = await session(cluster.nginx.base, ev);
  const answers = await raceOnBoth(20, (instance) => authorize(instance.base, ev, token, 1).then(() => 201, (e) => e.message));
  const made = answers.filter((a) => a === 201).length;
  assert.equal(made, UNCONFIRMED_PER_SESSION, `authorized: ${answers.join(" | ")}`);
  assert.ok(answers.filter((a) => a !== 201).every((a) => /: 403 .*too_many_unconfirmed/.test(a)), answers.join(" | "));
});

test("a rate limit is per instance and per client address, the address nginx forwards", async () => {
  const ev = await createEvent(cluster.api);
  const wall = `/v1/events/${ev.event.slug}/wall?code=${ev.guest_code}`;
  const statuses = [];
  // One after the other, so nginx's round robin alternates.
  for (let k = 0; k < 4 * WALL_RATE; k++) statuses.push((await request(cluster.nginx.base, "GET", wall, { from: "127.0.0.2" })).status);
  const admitted = statuses.filter((s) => s !== 429).length;
  assert.equal(admitted, 2 * WALL_RATE, `admitted through two instances: ${statuses.join(" ")}`);
  // Another guest behind the same nginx is not held up.
  assert.notEqual((await request(cluster.nginx.base, "GET", wall, { from: "127.0.0.3" })).status, 429);
  // Nor is the first one's address taken from what it writes itself.
  const spoofed = await request(cluster.nginx.base, "GET", wall, { from: "127.0.0.2", headers: { "x-forwarded-for": "127.0.0.9" } });
  assert.equal(spoofed.status, 429, "an X-Forwarded-For the client wrote itself is not believed");
});
