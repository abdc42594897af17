// The server as built for production (without the `test-hooks` feature;
// the e2e layer builds it so) carries no test seam: it refuses the
// `--test-hooks` flag at start, and has no `POST /v1/admin/test-hooks`
// route, even for the admin.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { startServer, SERVER_BIN, TARGET } from "./harness.mjs";

let server;
before(async () => { server = await startServer("no-test-hooks"); });
after(async () => { await server?.stop(); });

test("the production build refuses --test-hooks and has no test-hooks route", async () => {
  const dataDir = mkdtempSync(join(TARGET, "test-data", "e2e-no-hooks-flag-"));
  const started = spawnSync(SERVER_BIN, ["--listen", "127.0.0.1:0", "--data-dir", dataDir, "--test-hooks"], {
    encoding: "utf8",
    timeout: 20_000,
  });
  assert.notEqual(started.status, 0, "it does not start");
  assert.match(started.stderr, /unexpected argument '--test-hooks'/, started.stderr);

  const res = await fetch(`${server.base}/v1/admin/test-hooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.admin}`, "content-type": "application/json" },
    body: JSON.stringify({ confirm_hold_ms: 60_000 }),
  });
  assert.equal(res.status, 404);
  assert.equal((await res.json()).code, "route_not_found");
});
