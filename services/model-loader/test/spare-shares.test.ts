import { ROOT_CONTEXT } from "@opentelemetry/api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MB, simModel, startSimNode, type SimNode } from "./sim-node.js";

/**
 * Spare copies shared by demand (`spareCopies: 1`): free memory goes to the model that gets
 * the work, and when the work moves to another model, the first one's spare copies are
 * unloaded after the window and the other one takes their place.
 */
let node: SimNode;

beforeAll(async () => {
  node = await startSimNode({
    models: [simModel("a"), simModel("b"), simModel("c")],
    workers: 3,
    // Two 100 MB slots per accelerator once 10 % headroom is kept free: six for three models,
    // so a model can have a copy on every accelerator only if another has fewer.
    capacityBytes: 230 * MB,
    policy: { spareCopies: 1, spareWindowMs: 3000, minResidencyMs: 500, idleDropMs: 600_000 },
  });
}, 300_000);

afterAll(async () => {
  await node.stop();
});

async function copies(model: string): Promise<number> {
  const body = (await node.api(`/v1/catalog/${model}`)).body;
  return (body["copies"] as { state: string }[]).filter((c) => c.state === "resident").length;
}

/**
 * Sends about 50 requests a second to `model` until `reached` says so (or fails after a
 * minute); every request must be answered.
 */
async function load(model: string, reached: () => Promise<boolean>): Promise<void> {
  const until = performance.now() + 60_000;
  const answers: Promise<unknown>[] = [];
  for (let i = 0; !(await reached()); i++) {
    if (performance.now() > until) throw new Error(`copies did not follow the work to ${model}`);
    answers.push(
      node.gateway.embed({ model: `sim/${model}`, inputs: [`request ${i}`] }, ROOT_CONTEXT),
    );
    await new Promise((r) => setTimeout(r, 20));
  }
  const failed = (await Promise.allSettled(answers)).filter((s) => s.status === "rejected");
  expect(failed.map((f) => String(f.reason))).toEqual([]);
}

it("gives free memory to the model with the work, and moves it when the work moves", async () => {
  for (const model of ["b", "c"]) {
    await node.gateway.embed({ model: `sim/${model}`, inputs: ["warm"] }, ROOT_CONTEXT);
  }
  // a's work earns it a copy on every accelerator.
  await load("a", async () => (await copies("a")) === 3);

  // The work moves to b: a's spare copies are unloaded after the window and b takes their
  // memory, on every accelerator, which it can only have once a has given two back.
  await load("b", async () => (await copies("b")) === 3 && (await copies("a")) === 1);
  expect(await copies("c")).toBeGreaterThanOrEqual(1);
}, 300_000);
