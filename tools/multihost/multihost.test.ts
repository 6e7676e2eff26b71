/**
 * Shoal across hosts, on one machine: network namespaces as hosts (tools/multihost/lab.ts), a
 * three-server NATS JetStream cluster with every stream and bucket replicated three times, two
 * ingress hosts, two worker hosts (a model-loader and a worker with its sidecar on each, the
 * real MiniLM model), and a client host sending steady load through all of it. Services run
 * from the production build. Under that load, in turn: the work stream's NATS leader is killed
 * and restarted, a worker host is cut off for longer than the ack wait and healed, a worker
 * host dies outright and is replaced, and the workers then ingress are rolled back to the last
 * release (release.json, built from its commit) and forward again, host by host.
 * After each, every request the load sent must have been answered once, with the right vector.
 * Figures go to $SHOAL_MULTIHOST_REPORT when set (docs/benchmarks.md, "Across hosts").
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, tempDir, type ManagedProcess } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeNatsAuth } from "../cluster/nats-users.js";
import { Lab, type LabHost } from "./lab.js";
import { recoveryMs, summarize, type LoadRecord, type WindowSummary } from "./load-record.js";
import { MultiHostLayout, PORTS, type Build } from "./layout.js";
import { prepareReleaseTree } from "../build/release-tree.js";

const ACK_WAIT_MS = 5000;
const RATE = 30;
const root = repoRoot();

let lab: Lab | undefined;
let layout: MultiHostLayout;
let load: ManagedProcess | undefined;
let loadOut: string;
let natsUrl: string;
/** This checkout's build, and the last release's (release.json), both production builds. */
let current: Build;
let release: Build;
let releaseVersion: string;
const report: Record<string, unknown> = {};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} not within ${timeoutMs} ms\n${layout.outputs()}`);
    await sleep(250);
  }
}

function host(name: string): LabHost {
  if (lab === undefined) throw new Error("no lab");
  return lab.host(name);
}

/**
 * The NATS seeds a build's processes are given: all three for this build; the first alone for
 * a release, which may take only one URL (clients learn the other servers from it).
 */
function seedsFor(build: Build): string {
  return build === current ? natsUrl : (natsUrl.split(",")[0] ?? natsUrl);
}

/** Waits until ingress on `edge` answers its API, a check any version of ingress passes. */
async function serving(edge: LabHost): Promise<void> {
  await until(`ingress on ${edge.name} serving`, 120_000, () =>
    host("client").get(`http://${edge.address}:${PORTS.ingress}/v1/models`).status === 200
      ? true
      : undefined,
  );
}

/** Waits for a service's /readyz, asked from the client host as a kubelet would ask. */
async function ready(on: LabHost, port: number): Promise<void> {
  await until(`${on.name}:${port} ready`, 120_000, () =>
    host("client").get(`http://${on.address}:${port}/readyz`).status === 200 ? true : undefined,
  );
}

/** The NATS server that leads the work stream now, as the cluster's monitoring reports it. */
function workStreamLeader(): string | undefined {
  for (const name of ["n1", "n2", "n3"]) {
    const res = host("client").get(
      `http://${host(name).address}:${PORTS.natsMonitor}/jsz?accounts=true&streams=true`,
    );
    if (res.status !== 200) continue;
    const jsz = JSON.parse(res.body) as {
      account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
    };
    for (const account of jsz.account_details ?? []) {
      for (const s of account.stream_detail ?? []) {
        if (s.name === "SHOAL_WORK" && s.cluster?.leader) return s.cluster.leader;
      }
    }
  }
  return undefined;
}

/** The worker ids holding a resident copy of MiniLM on `node`, from its model-loader. */
function residentWorkers(node: LabHost): string[] {
  const res = host("client").get(`http://${node.address}:${PORTS.loader}/v1/residency`);
  if (res.status !== 200) return [];
  const body = JSON.parse(res.body) as {
    workers?: { worker: string; replicas?: { model: string; state: string }[] }[];
  };
  return (body.workers ?? [])
    .filter((w) => w.replicas?.some((r) => r.model.includes("minilm") && r.state === "resident"))
    .map((w) => w.worker);
}

/** Answers the ingresses dropped as repeats of answered work (redelivered and done twice). */
function duplicateAnswersAtIngress(): number {
  let total = 0;
  for (const edge of ["edge-a", "edge-b"]) {
    const res = host("client").get(`http://${host(edge).address}:${PORTS.ingressOps}/metrics`);
    const line = /^shoal_ingress_duplicate_answers_total (\d+)/m.exec(res.body);
    total += Number(line?.[1] ?? 0);
  }
  return total;
}

function records(): LoadRecord[] {
  return readFileSync(loadOut, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as LoadRecord);
}

/**
 * Ends a phase begun at `fromMs`: waits until every request started before now has its
 * record (a request lasts at most the load's 60 s timeout), then sums up the window.
 */
async function endPhase(name: string, fromMs: number, faultMs?: number): Promise<WindowSummary> {
  const toMs = Date.now();
  await until(`the answers of phase ${name}`, 75_000, () => {
    const all = records();
    const later = all.find((r) => r.startMs >= toMs);
    if (later === undefined) return undefined;
    const seqs = new Set(all.map((r) => r.seq));
    for (let seq = 0; seq < later.seq; seq++) if (!seqs.has(seq)) return undefined;
    return true;
  });
  const all = records();
  const summary = summarize(all, fromMs, toMs);
  report[name] = {
    ...summary,
    failed: summary.failed.slice(0, 10),
    seconds: (toMs - fromMs) / 1000,
    ...(faultMs === undefined ? {} : { recoveryMs: recoveryMs(all, faultMs) }),
  };
  return summary;
}

function expectClean(summary: WindowSummary): void {
  expect(summary.failed).toEqual([]);
  expect(summary.wrongAnswers).toBe(0);
  expect(summary.duplicates).toBe(0);
  expect(summary.answered).toBe(summary.requests);
  expect(summary.requests).toBeGreaterThan(0);
}

async function startWorkerHost(name: string, build: Build): Promise<string> {
  const node = host(name);
  layout.startLoader(node, build, natsUrl);
  const id = await layout.startWorker(node, build, natsUrl);
  await ready(node, PORTS.loaderOps);
  await ready(node, PORTS.workerOps);
  await until(`${id} resident`, 180_000, () =>
    residentWorkers(node).includes(id) ? true : undefined,
  );
  return id;
}

beforeAll(async () => {
  const dir = await tempDir("multihost");
  const build = (out: string, source: string): void => {
    execFileSync(
      "node",
      ["--import", "tsx", "tools/build/build.ts", "--out", out, "--source", source],
      {
        cwd: root,
        stdio: "ignore",
      },
    );
  };
  build(join(dir, "current"), root);
  current = { dir: join(dir, "current"), env: {} };
  const released = JSON.parse(readFileSync(join(root, "release.json"), "utf8")) as {
    version: string;
    commit: string;
  };
  releaseVersion = released.version;
  const tree = join(dir, "release-tree");
  await prepareReleaseTree(root, released.commit, tree);
  build(join(dir, "release"), tree);
  // A release's bundles may look for these beside the repository they came from: name them.
  release = {
    dir: join(dir, "release"),
    env: {
      SHOAL_CATALOG: join(tree, "deploy/catalog/default.json"),
      SHOAL_BUNDLE: join(tree, "bundles/cpu.json"),
    },
  };
  const authDir = join(dir, "nats-auth");
  await writeNatsAuth(authDir);
  const made = Lab.create();
  lab = made;
  for (const name of ["n1", "n2", "n3", "edge-a", "edge-b", "gpu-a", "gpu-b", "client"]) {
    made.addHost(name);
  }
  layout = new MultiHostLayout({
    dir,
    authDir,
    ackWaitMs: ACK_WAIT_MS,
    env: { ...process.env },
  });
  const natsHosts = ["n1", "n2", "n3"].map(host);
  natsUrl = layout.natsUrls(natsHosts);
  await Promise.all(natsHosts.map((h) => layout.startNats(h, natsHosts)));
  await layout.bootstrap(host("client"), current, natsUrl);
  await Promise.all(["gpu-a", "gpu-b"].map((h) => startWorkerHost(h, current)));
  for (const edge of ["edge-a", "edge-b"]) layout.startIngress(host(edge), current, natsUrl);
  for (const edge of ["edge-a", "edge-b"]) await ready(host(edge), PORTS.ingressOps);
  loadOut = join(dir, "load.jsonl");
  const targets = ["edge-a", "edge-b"].map((e) => `http://${host(e).address}:${PORTS.ingress}`);
  const client = host("client").spawn(
    "node",
    [
      "--import",
      "tsx",
      join(root, "tools/multihost/steady-load.ts"),
      "--targets",
      targets.join(","),
      "--rate",
      String(RATE),
      "--out",
      loadOut,
    ],
    { ...process.env },
  );
  load = client;
  await client.waitForLine("stdout", (l) => l === "ready", 120_000, "its reference vectors");
}, 600_000);

afterAll(async () => {
  load?.kill("SIGTERM");
  await load?.exited;
  const out = process.env["SHOAL_MULTIHOST_REPORT"];
  if (out) writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  lab?.destroy();
}, 120_000);

describe("Shoal across hosts, under steady load", () => {
  it("loses no accepted request when the work stream's NATS leader is killed, then restarted", async () => {
    const from = Date.now();
    await sleep(5000);
    const leader = await until("a work stream leader", 30_000, workStreamLeader);
    const fault = Date.now();
    await layout.killNats(host(leader));
    await sleep(10_000);
    await layout.startNats(host(leader), ["n1", "n2", "n3"].map(host));
    const back = await until("the restarted server current", 60_000, () =>
      host("client").get(`http://${host(leader).address}:${PORTS.natsMonitor}/healthz`).status ===
      200
        ? Date.now()
        : undefined,
    );
    await sleep(5000);
    report["nats leader kill"] = { leader, newLeader: workStreamLeader(), rejoinMs: back - fault };
    expectClean(await endPhase("nats leader kill: requests", from, fault));
  }, 240_000);

  it("answers elsewhere what a cut-off worker host held, and takes it back once healed", async () => {
    const from = Date.now();
    await sleep(3000);
    const fault = Date.now();
    host("gpu-b").partition();
    await sleep(2 * ACK_WAIT_MS);
    host("gpu-b").heal();
    await ready(host("gpu-b"), PORTS.workerOps);
    await until("gpu-b serving again", 60_000, () =>
      residentWorkers(host("gpu-b")).length > 0 ? true : undefined,
    );
    await sleep(5000);
    expectClean(await endPhase("worker host partition", from, fault));
    // What the cut-off worker finished after its items had gone elsewhere may still reach
    // ingress once healed: dropped there, never seen by a client, and counted.
    report["worker host partition: answers dropped at ingress"] = duplicateAnswersAtIngress();
  }, 240_000);

  it("answers elsewhere what a worker host that died held, and serves on its replacement", async () => {
    const from = Date.now();
    await sleep(3000);
    const fault = Date.now();
    host("gpu-a").killAll();
    await sleep(3 * ACK_WAIT_MS);
    const replaced = Date.now();
    const worker = await startWorkerHost("gpu-a", current);
    report["worker host kill"] = { replacedWith: worker, replaceMs: Date.now() - replaced };
    await sleep(5000);
    expectClean(await endPhase("worker host kill: requests", from, fault));
  }, 300_000);

  it("rolls from this build to the last release and back, host by host, without failing a request", async () => {
    // Workers back to the release (new ingress, old workers), then ingress (all old), then
    // ingress forward (new ingress, old workers), then the workers (all new): every mix of two
    // adjacent versions a rolling upgrade or a rollback passes through, under load.
    const from = Date.now();
    const steps: Record<string, number> = {};
    const rollWorkers = async (to: Build, name: string): Promise<void> => {
      for (const node of ["gpu-a", "gpu-b"]) {
        const started = Date.now();
        await layout.process(`worker@${node}`).terminate("SIGTERM", 30_000);
        const id = await layout.startWorker(host(node), to, seedsFor(to));
        await until(`${id} resident`, 180_000, () =>
          residentWorkers(host(node)).includes(id) ? true : undefined,
        );
        steps[`worker@${node} to ${name}`] = Date.now() - started;
        await sleep(2000);
      }
    };
    const rollIngress = async (to: Build, name: string): Promise<void> => {
      for (const edge of ["edge-a", "edge-b"]) {
        const started = Date.now();
        await layout.process(`ingress@${edge}`).terminate("SIGTERM", 30_000);
        layout.startIngress(host(edge), to, seedsFor(to));
        await serving(host(edge));
        steps[`ingress@${edge} to ${name}`] = Date.now() - started;
        await sleep(2000);
      }
    };
    const releaseName = `release ${releaseVersion}`;
    await rollWorkers(release, releaseName);
    await rollIngress(release, releaseName);
    await rollIngress(current, "this build");
    await rollWorkers(current, "this build");
    report["rolling between the release and this build: steps (ms)"] = steps;
    expectClean(await endPhase("rolling between the release and this build", from));
  }, 600_000);
});
