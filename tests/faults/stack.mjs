// The fault suite's stack: the reference server behind the fault-injecting
// proxy (testing/fault-proxy). The browser only ever talks to the proxy: the
// pages, the API and the signed storage URLs (the server's --public-url is
// the proxy), so every request can be broken on purpose.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ROOT, startServer, untilListening, until, hostMedia, photos, createEvent } from "../e2e/harness.mjs";
import { openGuest } from "../e2e/pages.mjs";

export const PROXY_BIN = process.env.UPLOAD_ONCE_FAULT_PROXY_BIN ?? join(ROOT, "target/debug/upload-once-fault-proxy");

export async function startStack(name, { serverArgs = [] } = {}) {
  // The proxy first, on a port it picks itself (the server's --public-url
  // is the proxy); then the server; then the proxy learns where it is.
  const child = spawn(PROXY_BIN, ["--listen", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  child.log = "";
  child.stderr.on("data", (d) => { child.log += d; });
  let port;
  await untilListening(child, "the fault proxy", (out) => {
    port = /fault-proxy: listening on 127\.0\.0\.1:(\d+)/.exec(out)?.[1];
    return port !== undefined;
  }).then((listened) => { if (!listened) throw new Error(`the fault proxy could not listen:\n${child.log}`); });
  const base = `http://127.0.0.1:${port}`;
  const server = await startServer(name, ["--public-url", base, "--test-hooks", ...serverArgs]).catch((e) => {
    child.kill("SIGTERM");
    throw e;
  });
  const admin = async (method, path, body) => {
    const res = await fetch(`${base}/__faults/${path}`, {
      method, headers: { "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`proxy ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const proxy = {
    rules: (...rules) => admin("POST", "rules", { rules }),
    /** Removes every rule; the logs stay. */
    clearRules: () => admin("DELETE", "rules"),
    reset: () => admin("POST", "reset"),
    /** Forwards the requests a `store_late` rule without `ms` holds. */
    release: () => admin("POST", "release"),
    upstream: (url) => admin("POST", "upstream", { upstream: url }),
    /** Requests forwarded to the server and not answered yet (it is at work on them). */
    inFlight: async () => (await admin("GET", "log")).in_flight,
    seed: (seed) => admin("POST", "seed", { seed }),
    log: () => admin("GET", "log"),
    /** Requests the proxy passed on to the server, matching method and a path test. */
    async forwarded(method, test) {
      const { requests } = await admin("GET", "log");
      return requests.filter((r) => r.forwarded && r.method === method && test(r.path));
    },
    stop: async () => { child.kill("SIGTERM"); },
  };
  /** Holds every confirm inside its transaction (holding the attempt's row lock) this long. */
  const hold = async (ms) => {
    const res = await fetch(`${server.base}/v1/admin/test-hooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.admin}`, "content-type": "application/json" },
      body: JSON.stringify({ confirm_hold_ms: ms }),
    });
    if (!res.ok) throw new Error(`test hooks: ${res.status}`);
  };
  await proxy.upstream(server.base);
  /**
   * Kills the server (SIGKILL) and starts it again on the same data; on
   * another port if its own was taken meanwhile (the proxy follows it).
   */
  const restartServer = async (signal = "SIGKILL") => {
    await server.restart(signal, { movable: true });
    await proxy.upstream(server.base);
  };
  const sweep = async () => {
    const res = await fetch(`${server.base}/v1/admin/sweep`, { method: "POST", headers: { authorization: `Bearer ${server.admin}` } });
    if (!res.ok) throw new Error(`sweep: ${res.status}`);
    return res.json();
  };
  return {
    server, proxy, base, hold, sweep, restartServer,
    guestUrl: (ev) => `${base}/?event=${ev.event.slug}&code=${ev.guest_code}`,
    stop: async () => { await proxy.stop(); await server.stop(); },
  };
}

/**
 * The start of a test on `stack`: clears the proxy (its rules and its log),
 * creates an event, sets this test's proxy `rules` (none: every request
 * passes) and opens the event's guest page in a new context of `browser`.
 */
export async function openFreshGuest(stack, browser, ...rules) {
  await stack.proxy.reset();
  const ev = await createEvent(stack.server);
  if (rules.length > 0) await stack.proxy.rules(...rules);
  const context = await browser.newContext();
  const page = await openGuest(context, stack.guestUrl(ev));
  return { ev, context, page };
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

/** The server's `AttemptStatus` of attempt `id`, asked with the page's own session. */
export async function attemptStatus(server, page, ev, id) {
  const token = await sessionToken(page, ev.event.slug);
  const res = await fetch(`${server.base}/v1/attempts/${id}`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`status of ${id}: ${res.status} ${await res.text()}`);
  return res.json();
}
