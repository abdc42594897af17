// The fault suite's stack: the reference server behind the fault-injecting
// proxy (testing/fault-proxy). The browser only ever talks to the proxy: the
// pages, the API and the signed storage URLs (the server's --public-url is
// the proxy), so every request can be broken on purpose.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ROOT, freePort, startServer, until, hostMedia, photos } from "../e2e/harness.mjs";

export const PROXY_BIN = process.env.UPLOAD_ONCE_FAULT_PROXY_BIN ?? join(ROOT, "target/debug/upload-once-fault-proxy");

export async function startStack(name, { serverArgs = [] } = {}) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startServer(name, ["--public-url", base, "--test-hooks", ...serverArgs]);
  const child = spawn(PROXY_BIN, ["--listen", `127.0.0.1:${port}`, "--upstream", server.base], { stdio: ["ignore", "ignore", "pipe"] });
  child.log = "";
  child.stderr.on("data", (d) => { child.log += d; });
  await until("the proxy to answer", async () => {
    try { return (await fetch(`${base}/__faults/log`)).ok; } catch { return false; }
  }, 20_000, 50);
  const admin = async (method, path, body) => {
    const res = await fetch(`${base}/__faults/${path}`, {
      method, headers: { "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`proxy ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const proxy = {
    rules: (...rules) => admin("POST", "rules", { rules }),
    reset: () => admin("POST", "reset"),
    seed: (seed) => admin("POST", "seed", { seed }),
    log: () => admin("GET", "log"),
    /** Requests the proxy passed on to the server, matching method and a path test. */
    async forwarded(method, test) {
      const { requests } = await admin("GET", "log");
      return requests.filter((r) => r.forwarded && r.method === method && test(r.path));
    },
    stop: async () => { child.kill("SIGTERM"); },
  };
  /** Holds every object-store HEAD (inside confirm's transaction) this long. */
  const hold = async (ms) => {
    const res = await fetch(`${server.base}/v1/admin/test-hooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.admin}`, "content-type": "application/json" },
      body: JSON.stringify({ head_delay_ms: ms }),
    });
    if (!res.ok) throw new Error(`test hooks: ${res.status}`);
  };
  const sweep = async () => {
    const res = await fetch(`${server.base}/v1/admin/sweep`, { method: "POST", headers: { authorization: `Bearer ${server.admin}` } });
    if (!res.ok) throw new Error(`sweep: ${res.status}`);
    return res.json();
  };
  return {
    server, proxy, base, hold, sweep,
    guestUrl: (ev) => `${base}/?event=${ev.event.slug}&code=${ev.guest_code}`,
    stop: async () => { await proxy.stop(); await server.stop(); },
  };
}

/** The attempts the page's uploader holds. */
export const attempts = (page) => page.evaluate(() => window.uploader.list());

/** Waits until the page holds `n` attempts and all are terminal. */
export function untilSettled(page, n, ms = 60_000) {
  return until(`${n} attempts to settle`, async () => {
    const list = await attempts(page);
    return list.length === n && list.every((a) => a.terminal) && list;
  }, ms, 100);
}

/** Media rows on the server, per attempt id. */
export async function rowsByAttempt(server, ev) {
  const media = await hostMedia(server, ev);
  const rows = new Map();
  for (const m of media) rows.set(m.attempt_id, (rows.get(m.attempt_id) ?? 0) + 1);
  return { media, rows };
}

export { photos, until };

/** The list when it is not empty (for `until`), else null. */
export const nonEmpty = (list) => (list.length ? list : null);

/** The page's guest session token, read from IndexedDB. */
export function sessionToken(page, slug) {
  return page.evaluate((slug) => new Promise((resolve, reject) => {
    const open = indexedDB.open("upload-once");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const get = open.result.transaction("meta").objectStore("meta").get(`session:${location.origin}|${slug}`);
      get.onsuccess = () => { resolve(get.result.token); open.result.close(); };
      get.onerror = () => reject(get.error);
    };
  }), slug);
}
