// Bytes sent again after three cuts of a 1 GiB upload, counted at the fault
// proxy (issue 14): the guest page uploads one video through the proxy
// (headless Chromium), and the proxy cuts three storage PUTs half-way
// through a part, at the same points of the file's progress each way:
//
// - in parts (the server's defaults: files above 32 MiB in 8 MiB parts,
//   three parts in flight): the PUTs of parts 20, 60 and 100 are cut 4 MiB
//   in; what was in flight is sent again, nothing else;
// - in one PUT (a server whose multipart threshold is 8 GiB): each PUT
//   starts again from byte 0, so the first is cut where the 20th part's
//   cut falls in the file (156 MiB), the second where the 60th part's does
//   (476 MiB), the third where the 100th part's does (796 MiB).
//
// Sent again = every storage PUT body byte the proxy read − the file's size.
//
//   node bench/resent_after_cuts.mjs [--mib 1024]
//
// Environment: UPLOAD_ONCE_SERVER_BIN, UPLOAD_ONCE_FAULT_PROXY_BIN,
// UPLOAD_ONCE_CHROMIUM (the e2e harness's defaults: target/debug, Debian's
// chromium). Everything runs on loopback and stops by itself.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createEvent, TARGET } from "../tests/e2e/harness.mjs";
import { launch, openGuest, pick } from "../tests/e2e/pages.mjs";
import { writeSeededFile } from "./stack.mjs";
import { startStack, untilSettled } from "../tests/faults/stack.mjs";

const MIB = 1 << 20;
const args = process.argv.slice(2);
const SIZE_MIB = args.includes("--mib") ? Number(args[args.indexOf("--mib") + 1]) : 1024;
const SIZE = SIZE_MIB * MIB;
const PART = 8 * MIB;
// The parts cut (1-based), and how far into each.
const CUT_PARTS = [20, 60, 100].map((n) => Math.min(n, Math.max(1, Math.floor((n / 128) * (SIZE / PART)))));
const CUT_INTO = 4 * MIB;

/** Uploads the file through a stack started with `serverArgs`, with `rules` at the proxy. */
async function run(name, serverArgs, rules, seed, browser, path) {
  const stack = await startStack(name, { serverArgs });
  try {
    const ev = await createEvent(stack.server, { moderation: "none", maxFileBytes: 4 * SIZE, types: ["video/*"] });
    await stack.proxy.reset();
    await stack.proxy.rules(...rules);
    const context = await browser.newContext();
    const page = await openGuest(context, stack.guestUrl(ev));
    const started = performance.now();
    await pick(page, [path]);
    const [a] = await untilSettled(page, 1, 600_000);
    const ms = performance.now() - started;
    const log = await stack.proxy.log();
    await context.close();
    if (a.confirmation !== "confirmed") throw new Error(`${name}: the upload ended ${a.transfer}/${a.confirmation}: ${JSON.stringify(a.error)}`);
    if (log.faults.length !== rules.length) throw new Error(`${name}: ${log.faults.length} cuts happened, ${rules.length} were due`);
    const puts = log.requests.filter((r) => r.method === "PUT" && r.path.startsWith("/storage/"));
    const sent = puts.reduce((n, r) => n + (r.body_bytes ?? 0), 0);
    return { name, puts: puts.length, sent, resent: sent - SIZE, cuts: log.faults.length, ms, parts: a.partCount ?? null };
  } finally {
    await stack.stop();
  }
}

const dir = join(TARGET, "bench-resent");
mkdirSync(dir, { recursive: true });
const path = join(dir, "video.mp4");
writeSeededFile(path, SIZE_MIB, Date.now() % 1000);
const browser = await launch();
try {
  // The proxy's first rule that fires takes the request, and later rules
  // do not count it: the k-th rule (0-based) sees k fewer PUTs.
  const cut = (nth, afterBytes, k) => ({ method: "PUT", path: "/storage/*", nth: nth - k, action: { kind: "cut_body", after_bytes: afterBytes } });
  // Parts go up three at a time, so the nth PUT the proxy sees is about the
  // nth part; the cut lands 4 MiB into it.
  const inParts = await run("resent-parts", [], CUT_PARTS.map((n, k) => cut(n, CUT_INTO, k)), 1, browser, path);
  // One PUT: attempt k is cut at the file offset of the k-th part cut.
  const offsets = CUT_PARTS.map((n) => (n - 1) * PART + CUT_INTO);
  const onePut = await run("resent-one-put", ["--multipart-threshold", "8GiB"], offsets.map((o, k) => cut(k + 1, o, k)), 2, browser, path);
  const mib = (b) => (b / MIB).toFixed(1);
  const bound = 3 * 3 * PART;
  console.log(JSON.stringify({ size_mib: SIZE_MIB, cut_parts: CUT_PARTS, inParts, onePut }, null, 2));
  console.log(`
| upload of ${SIZE_MIB} MiB, 3 cuts | storage PUTs | bytes sent again | time to confirmed |
| --- | --- | --- | --- |
| in 8 MiB parts, 3 in flight (cuts 4 MiB into parts ${CUT_PARTS.join(", ")}) | ${inParts.puts} | ${mib(inParts.resent)} MiB | ${(inParts.ms / 1000).toFixed(1)} s |
| in one PUT (cuts at ${offsets.map(mib).join(", ")} MiB) | ${onePut.puts} | ${mib(onePut.resent)} MiB | ${(onePut.ms / 1000).toFixed(1)} s |

target: in parts ≤ 3 × parallelism × part size = ${mib(bound)} MiB: ${inParts.resent <= bound ? "met" : "NOT met"}`);
} finally {
  await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
