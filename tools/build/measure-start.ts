/**
 * Start-up time and memory of every service, from the production build (`node main.mjs`) and
 * from source (`node --import tsx`), against a real nats-server:
 *
 *   node --import tsx tools/build/measure-start.ts [--build DIR] [--runs N] [--out FILE]
 *
 * Start-up is the time from spawning the process to its `/readyz` answering 200 (polled every
 * 10 ms); memory is its resident set (VmRSS) at that moment, and the worker's sidecar's too.
 * The median of `--runs` starts (3) per service and mode is reported, as JSON in FILE (and a
 * table on stdout). `--build` is a directory `npm run build` wrote (dist/ by default).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  freePort,
  ManagedProcess,
  repoRoot,
  sidecarBinary,
  startNatsServer,
  tempDir,
} from "@shoal/testing";
import { SERVICES as SERVICES_BUILT } from "./services.js";

const root = repoRoot();
const { values } = parseArgs({
  options: {
    build: { type: "string", default: join(root, "dist") },
    runs: { type: "string", default: "3" },
    out: { type: "string" },
  },
});
const runs = Number(values.runs);

interface ServiceStart {
  readonly name: string;
  readonly env: (dir: string) => Promise<Record<string, string>>;
}

const SERVICES: readonly ServiceStart[] = [
  {
    name: "ingress",
    env: async () => ({ SHOAL_PORT: String(await freePort()) }),
  },
  {
    name: "worker",
    // Under a model-loader's control (none runs here): it starts holding no model.
    env: async (dir) => ({
      SHOAL_NODE_ID: "measure",
      SHOAL_WORKER_MEMORY_BYTES: String(1024 ** 3),
      SHOAL_SIDECAR_BIN: sidecarBinary(),
      SHOAL_SIDECAR_SOCKET: join(dir, `sidecar-${String(await freePort())}.sock`),
    }),
  },
  {
    name: "model-loader",
    env: async () => ({ SHOAL_NODE_ID: "measure", SHOAL_LOADER_PORT: String(await freePort()) }),
  },
  {
    name: "lora-registry",
    env: async () => ({ SHOAL_REGISTRY_PORT: String(await freePort()) }),
  },
  {
    name: "blob-offloader",
    env: () => Promise.resolve({}),
  },
];

interface Sample {
  readonly ms: number;
  readonly rssMiB: number;
  readonly sidecarRssMiB?: number;
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

async function startOnce(
  service: ServiceStart,
  mode: "build" | "source",
  natsUrl: string,
  dir: string,
): Promise<Sample> {
  const opsPort = await freePort();
  const args =
    mode === "build"
      ? [join(values.build, service.name, "main.mjs")]
      : ["--import", "tsx", join(root, entryOf(service.name))];
  const started = performance.now();
  const child = ManagedProcess.spawn("node", args, {
    env: {
      ...process.env,
      NATS_URL: natsUrl,
      SHOAL_METRICS_PORT: String(opsPort),
      LOG_LEVEL: "warn",
      ...(await service.env(dir)),
    },
    stdin: "ignore",
  });
  try {
    for (;;) {
      if (child.exit !== undefined) {
        throw new Error(`${service.name} exited while starting:\n${child.output()}`);
      }
      const ready = await fetch(`http://127.0.0.1:${opsPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) break;
      if (performance.now() - started > 60_000)
        throw new Error(`${service.name} not ready in 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const ms = Math.round(performance.now() - started);
    const sidecar = service.name === "worker" ? childPids(child.pid)[0] : undefined;
    return {
      ms,
      rssMiB: rssMiB(child.pid),
      ...(sidecar === undefined ? {} : { sidecarRssMiB: rssMiB(sidecar) }),
    };
  } finally {
    await child.terminate("SIGTERM", 10_000);
  }
}

/** A service's main module, as the production build knows it. */
function entryOf(name: string): string {
  const build = SERVICES_BUILT.find((s) => s.name === name);
  if (build === undefined) throw new Error(`build.ts builds no service ${name}`);
  return build.entry;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};

const nats = await startNatsServer({ args: ["-js"] });
const dir = await tempDir("measure-start");
const results: Record<string, Record<string, Sample>> = {};
try {
  for (const service of SERVICES) {
    const byMode: Record<string, Sample> = {};
    results[service.name] = byMode;
    for (const mode of ["build", "source"] as const) {
      const samples: Sample[] = [];
      for (let i = 0; i < runs; i++) samples.push(await startOnce(service, mode, nats.url, dir));
      const sidecar = samples.flatMap((s) =>
        s.sidecarRssMiB === undefined ? [] : [s.sidecarRssMiB],
      );
      const r: Sample = {
        ms: median(samples.map((s) => s.ms)),
        rssMiB: median(samples.map((s) => s.rssMiB)),
        ...(sidecar.length === 0 ? {} : { sidecarRssMiB: median(sidecar) }),
      };
      byMode[mode] = r;
      console.log(
        `${service.name.padEnd(15)} ${mode.padEnd(7)} ready in ${String(r.ms).padStart(5)} ms, ` +
          `RSS ${r.rssMiB} MiB${r.sidecarRssMiB === undefined ? "" : ` (+ sidecar ${r.sidecarRssMiB} MiB)`}`,
      );
    }
  }
} finally {
  await nats.stop();
}
const report = {
  runs,
  node: process.version,
  cpus: (await import("node:os")).cpus().length,
  results,
};
if (values.out !== undefined) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
