// docs/deploy.md keeps `GET /metrics` off the public internet: its nginx
// site file refuses it, while each instance still serves it to a scraper
// that reaches the instance itself.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startCluster } from "./cluster.mjs";

let cluster;
before(async () => { cluster = await startCluster("metrics"); });
after(async () => { await cluster?.stop(); });

test("nginx refuses /metrics; each instance serves it", async () => {
  assert.equal((await fetch(`${cluster.nginx.base}/metrics`)).status, 403);
  for (const instance of cluster.instances) assert.equal((await fetch(`${instance.base}/metrics`)).status, 200);
});
