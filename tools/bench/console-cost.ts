/**
 * What open consoles cost the cluster: the console's CPU, and that of nats-server and ingress
 * (which answer its reads and scrapes), with 0, 1 and 100 pages open, each page a real
 * server-sent event stream read to the end, from `/proc`; the bytes a page receives a second;
 * and, last, the same processes with the console paused (SIGSTOP), for what it adds to them.
 *
 *   node --import tsx tools/bench/console-cost.ts --url http://127.0.0.1:8093 \
 *     --console-pid <pid> [--nats-pid <pid>] [--ingress-pid <pid>] [--pages 0,1,100] \
 *     [--seconds 20] [--out FILE]
 *
 * Run it against `npm start` (docs/console.md has the pids' one-liner).
 */
import { writeFile } from "node:fs/promises";
import { request, type ClientRequest } from "node:http";
import { parseArgs } from "node:util";
import { cpuUs } from "./overhead/proc-cpu.js";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:8093" },
    "console-pid": { type: "string" },
    "nats-pid": { type: "string" },
    "ingress-pid": { type: "string" },
    pages: { type: "string", default: "0,1,100" },
    seconds: { type: "string", default: "20" },
    out: { type: "string" },
  },
});
const consolePid = Number(values["console-pid"]);
if (!Number.isInteger(consolePid) || consolePid <= 0) {
  throw new Error("--console-pid is required (the console process's pid)");
}
const pids: Record<string, number[]> = { console: [consolePid] };
if (values["nats-pid"] !== undefined) pids["nats-server"] = [Number(values["nats-pid"])];
if (values["ingress-pid"] !== undefined) pids["ingress"] = [Number(values["ingress-pid"])];
const seconds = Number(values.seconds);

interface Page {
  bytes: number;
  readonly req: ClientRequest;
}

function openPage(): Promise<Page> {
  return new Promise((resolve, reject) => {
    const req = request(`${values.url}/events`, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`/events answered ${res.statusCode}`));
        return;
      }
      const page: Page = { bytes: 0, req };
      res.on("data", (chunk: Buffer) => {
        page.bytes += chunk.byteLength;
      });
      resolve(page);
    });
    req.on("error", reject);
    req.end();
  });
}

/** Each process's CPU over the next `seconds`, in % of one core. */
async function cpuPercent(): Promise<Record<string, number>> {
  const before = await cpuUs(pids);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const after = await cpuUs(pids);
  return Object.fromEntries(
    Object.keys(pids).map((name) => [
      name,
      Number((((after[name] ?? 0) - (before[name] ?? 0)) / (seconds * 1e4)).toFixed(2)),
    ]),
  );
}

const rows = [];
for (const count of values.pages.split(",").map(Number)) {
  const pages = await Promise.all(Array.from({ length: count }, openPage));
  // Let the pages' first snapshots and connection set-up pass before measuring.
  await new Promise((r) => setTimeout(r, 3_000));
  const bytesBefore = pages.reduce((n, p) => n + p.bytes, 0);
  const cpu = await cpuPercent();
  const bytes = pages.reduce((n, p) => n + p.bytes, 0) - bytesBefore;
  for (const p of pages) p.req.destroy();
  const row = {
    pages: count,
    cpu_percent_of_a_core: cpu,
    bytes_per_page_per_s: count === 0 ? 0 : Math.round(bytes / count / seconds),
  };
  console.error(`[console-cost] ${JSON.stringify(row)}`);
  rows.push(row);
}
process.kill(consolePid, "SIGSTOP");
let paused: Record<string, number>;
try {
  paused = await cpuPercent();
} finally {
  process.kill(consolePid, "SIGCONT");
}
console.error(`[console-cost] console paused: ${JSON.stringify(paused)}`);
rows.push({ pages: "console paused", cpu_percent_of_a_core: paused, bytes_per_page_per_s: 0 });
const result = { scenario: "console-cost", seconds, url: values.url, rows };
if (values.out !== undefined) await writeFile(values.out, `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result));
