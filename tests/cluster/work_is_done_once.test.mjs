// Work is done once: both instances run rendition workers and the sweeper
// over the same database, yet each media's renditions are made once and
// each lapsed attempt is expired once. Counted from each instance's own
// metrics: rendition jobs ended (a claim whose lease ran out ends nothing),
// rendition PUTs to the bucket, and attempts its sweeper expired. How the
// work fell between the two is printed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createEvent, photo, until } from "../e2e/harness.mjs";
import { startCluster } from "./cluster.mjs";
import { authorize, ok, sendAndConfirm, session } from "./client.mjs";

const PHOTOS = 20;
const LAPSED = 100;

let cluster;
before(async () => {
  // Attempts lapse after 10 s. The sweepers' own passes are an hour apart
  // (after the first, at start): the test makes both instances sweep at
  // the same moment instead, once the attempts have lapsed.
  cluster = await startCluster("once-work", { serverArgs: ["--attempt-ttl", "10s", "--url-ttl", "5s", "--sweep-interval", "1h"] });
});
after(async () => { await cluster?.stop(); });

const sum = async (series) => (await Promise.all(cluster.instances.map(async (i) => (await i.metrics()).get(series) ?? 0)));

test("renditions are made once per photo and lapsed attempts expired once, with both instances at work", async () => {
  const base = cluster.nginx.base;
  const ev = await createEvent(cluster.api, { moderation: "none" });
  const token = await session(base, ev);
  // A hundred that lapse (authorized, never sent), and twenty photos sent and confirmed.
  const lapsed = [];
  for (let k = 0; k < LAPSED; k++) lapsed.push(await authorize(base, ev, token, 1000 + k));
  // Each photo from a guest of its own (a session's jobs take one worker at
  // a time, in the whole cluster), large enough that its rendition takes a
  // while (1600×1200): the jobs are still there when the other instance's
  // workers look.
  const sent = await Promise.all(Array.from({ length: PHOTOS }, async (_, k) => {
    const guest = await session(base, ev);
    return sendAndConfirm(base, guest, await authorize(base, ev, guest, k + 1, photo(k + 1, 400_000, 1600, 1200)));
  }));
  assert.equal(new Set(sent.map((m) => m.id)).size, PHOTOS);

  // Each photo's display rendition asked of both instances at once: each
  // makes the job if it is missing and wakes its own workers, so the two
  // instances' workers race for every job (and their scans too). The links
  // are the host's list's (the wall shows a photo only once its renditions
  // are made).
  const { media: items } = await ok(base, "GET", `/v1/events/${ev.event.slug}/media`, { token: ev.host_token });
  assert.equal(items.length, PHOTOS);
  await Promise.all(items.flatMap((item) => cluster.instances.map(async (instance) => {
    const url = new URL(item.url, base);
    const res = await fetch(`${instance.base}${url.pathname}${url.search}`);
    assert.equal(res.status, 200, `${item.url} from ${instance.label}: ${res.status}`);
    await res.arrayBuffer();
  })));
  const doneSeries = 'upload_once_rendition_jobs_total{outcome="done"}';
  await until("every rendition job to end", async () => (await sum(doneSeries)).reduce((a, b) => a + b) >= PHOTOS, 60_000, 200);
  // Both instances sweep at once, once every lapsed attempt is past its expiry.
  // An attempt past its expiry is answered `expired`, without `expires_at`
  // (a slow machine gets there before the renditions end): then there is
  // nothing to wait for. Before, this waited on `Date.parse(undefined)`.
  const last = await ok(base, "GET", `/v1/attempts/${lapsed.at(-1).id}`, { token });
  if (last.state !== "expired") {
    await until("the attempts to lapse", () => Date.now() > Date.parse(last.expires_at) + 500, 30_000, 100);
  }
  const sweeps = await Promise.all(cluster.instances.map((i) => ok(i.base, "POST", "/v1/admin/sweep", { token: cluster.api.admin })));
  const states = await Promise.all(lapsed.map(({ id }) => ok(base, "GET", `/v1/attempts/${id}`, { token }).then((s) => s.state)));
  assert.deepEqual([...new Set(states)], ["expired"], "every lapsed attempt expired");
  assert.equal(sweeps.reduce((n, r) => n + r.expired, 0), LAPSED, `expired by the two sweeps: ${sweeps.map((r) => r.expired).join(" + ")}`);

  const done = await sum(doneSeries);
  const placeholders = await sum('upload_once_rendition_jobs_total{outcome="placeholder"}');
  const puts = await sum('upload_once_object_store_request_duration_seconds_count{operation="put"}');
  const expired = await sum("upload_once_sweeper_expired_attempts_total");
  console.log(`rendition jobs ended per instance: ${done.join(" + ")}; rendition PUTs: ${puts.join(" + ")}; expired by each sweeper: ${expired.join(" + ")}`);
  assert.ok(done.every((n) => n > 0), "both instances' workers ended jobs: they raced for them");
  assert.equal(done.reduce((a, b) => a + b), PHOTOS, "one rendition job ended per photo");
  assert.equal(placeholders.reduce((a, b) => a + b), 0);
  assert.equal(puts.reduce((a, b) => a + b), 2 * PHOTOS, "a display and a thumb per photo, each stored once");
  assert.equal(expired.reduce((a, b) => a + b), LAPSED, "each lapsed attempt expired once");
});
