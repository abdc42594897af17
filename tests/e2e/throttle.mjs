// A throttling TCP proxy in front of the reference server, for engines
// without network emulation (Firefox over WebDriver BiDi, WebKitGTK over
// plain WebDriver): the browser talks only to the proxy — pages, API and
// signed storage URLs (the server's --public-url is the proxy) — so its
// uplink can be slowed and cut the same way in every engine.
import { createServer, connect } from "node:net";
import { listenOnFreePort } from "./harness.mjs";

/**
 * Starts a proxy on a port the system picks, to `upstreamPort` (or to the
 * port given later to `setUpstream`: the server's --public-url is the proxy,
 * so the proxy starts first). `rate` limits the bytes per second going up
 * (browser → server), shared by every connection like one slow uplink;
 * `null` is unlimited. `offline` resets every connection and refuses new ones.
 */
export async function startThrottle(upstreamPort = null, { rate = null } = {}) {
  const state = { rate, offline: false, nextFree: 0, upstreamPort };
  const sockets = new Set();
  const server = createServer((client) => {
    if (state.offline || state.upstreamPort === null) return client.resetAndDestroy();
    const upstream = connect(state.upstreamPort, "127.0.0.1");
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy(); upstream.destroy();
      sockets.delete(client); sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    upstream.pipe(client);
    client.on("data", (chunk) => {
      upstream.write(chunk);
      if (!state.rate) return;
      // Hold further reads until this chunk's share of the uplink is used up.
      const now = Date.now();
      state.nextFree = Math.max(state.nextFree, now) + (chunk.length / state.rate) * 1000;
      client.pause();
      setTimeout(() => client.resume(), state.nextFree - now);
    });
  });
  const port = await listenOnFreePort(server);
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    /** Where connections go from now on. */
    setUpstream(port) { state.upstreamPort = port; },
    /** Bytes per second up, or null for no limit. */
    setRate(rate) { state.rate = rate; state.nextFree = 0; },
    /** Cuts every connection (and refuses new ones) while true. */
    setOffline(offline) {
      state.offline = offline;
      if (offline) for (const s of sockets) s.resetAndDestroy();
    },
    close: () => { for (const s of sockets) s.destroy(); return new Promise((r) => server.close(r)); },
  };
}
