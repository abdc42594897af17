// What bench/under_attack.mjs and bench/while_transcoding.mjs share: an
// honest guest's add → confirmed, one 4 MiB photo at a time through the
// guest page, and the figures around it.
import { readFileSync } from "node:fs";
import { photo, until } from "../tests/e2e/harness.mjs";

/** The `p`th percentile of sorted samples (nearest rank). */
export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** CPU seconds of the whole machine so far (every core, busy time only). */
export function machineBusySeconds() {
  const [, ...t] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = t.map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

/**
 * `n` photos picked one after another in the guest `page`, each timed from
 * the pick until the uploader has it confirmed; sorted. Each phase (`label`,
 * one of `phases`) has photos of its own: one with another phase's bytes
 * would be a duplicate, confirmed without a transfer. `beforeEach()` runs
 * before each pick, untimed.
 */
export async function honestSamples(page, n, label, phases, beforeEach = async () => {}) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const name = `${label}-${i + 1}.png`;
    const buffer = photo(phases.indexOf(label) * 100_000 + i + 1, 4 << 20);
    await beforeEach();
    const started = performance.now();
    await page.setInputFiles("[data-testid='file-input']", [{ name, mimeType: "image/png", buffer }]);
    await until(`${name} to be saved`, async () => {
      const list = await page.evaluate(() => window.uploader.list());
      return list.some((a) => a.fileName === name && a.confirmation === "confirmed");
    }, 300_000, 20);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}
