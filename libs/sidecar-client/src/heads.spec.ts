import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScriptedSidecar } from "../test/support/scripted-sidecar.js";
import { SidecarClient } from "./client.js";
import { toFloat32Array } from "./float32.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";

let dir: string;
let peer: ScriptedSidecar;
let client: SidecarClient;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "shoal-heads-spec-"));
  peer = await ScriptedSidecar.start(dir);
  client = await SidecarClient.connect({ socketPath: peer.socketPath, requestTimeoutMs: 2000 });
});

afterEach(async () => {
  await client.close();
  await peer.stop();
  await rm(dir, { recursive: true, force: true });
});

const f32 = (values: number[]): Uint8Array => new Uint8Array(new Float32Array(values).buffer);
const accounting = (n: number): object => ({
  count: n,
  tokens: Array.from({ length: n }, () => 4),
  truncated: Array.from({ length: n }, () => false),
  queue_us: 1,
  compute_us: 2,
});

describe("score", () => {
  it("sends parallel arrays and returns the raw f32 scores", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, scores: f32([0.9, 0.1]), ...accounting(2) });
    };
    const result = await client.score({
      model: "r",
      queries: ["q", "q"],
      documents: ["a", "b"],
      truncate: false,
    });
    expect(peer.requests[0]).toEqual({
      id: 1,
      op: "score",
      model: "r",
      queries: ["q", "q"],
      documents: ["a", "b"],
      truncate: false,
    });
    expect(Array.from(toFloat32Array(result.scores))).toEqual([Math.fround(0.9), Math.fround(0.1)]);
    expect(result.tokens).toEqual([4, 4]);
  });

  it("refuses unequal arrays locally", async () => {
    await expect(client.score({ model: "r", queries: ["q"], documents: [] })).rejects.toThrow(
      RangeError,
    );
    expect(peer.requests).toHaveLength(0);
  });

  it.each([
    ["a count that differs from the pairs sent", { scores: f32([1]), ...accounting(1) }],
    ["scores of the wrong byte length", { scores: f32([1, 2, 3]), ...accounting(2) }],
    ["scores that are not bin", { scores: [1, 2], ...accounting(2) }],
  ])("rejects %s", async (_what, body) => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, ...body });
    };
    await expect(
      client.score({ model: "r", queries: ["q", "q"], documents: ["a", "b"] }),
    ).rejects.toBeInstanceOf(SidecarProtocolError);
  });
});

describe("classify", () => {
  it("returns labels and a count × labels probability matrix", async () => {
    peer.onRequest = (req, p) => {
      p.send({
        id: req.id,
        ok: true,
        labels: ["neg", "pos"],
        probabilities: f32([0.25, 0.75]),
        ...accounting(1),
      });
    };
    const result = await client.classify({ model: "c", inputs: ["good"] });
    expect(peer.requests[0]).toEqual({ id: 1, op: "classify", model: "c", inputs: ["good"] });
    expect(result.labels).toEqual(["neg", "pos"]);
    expect(Array.from(toFloat32Array(result.probabilities))).toEqual([0.25, 0.75]);
  });

  it("rejects a matrix that does not match the labels", async () => {
    peer.onRequest = (req, p) => {
      p.send({
        id: req.id,
        ok: true,
        labels: ["a", "b", "c"],
        probabilities: f32([0.5, 0.5]),
        ...accounting(1),
      });
    };
    await expect(client.classify({ model: "c", inputs: ["x"] })).rejects.toBeInstanceOf(
      SidecarProtocolError,
    );
  });
});

describe("extract", () => {
  it("returns one entity list per input", async () => {
    const entity = { label: "PER", text: "Zoë", start: 0, end: 3, score: 0.5 };
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, entities: [[entity], []], ...accounting(2) });
    };
    const result = await client.extract({ model: "e", inputs: ["Zoë runs", "nothing"] });
    expect(result.entities).toEqual([[entity], []]);
  });

  it.each([
    [
      "an entity that ends before it starts",
      [[{ label: "X", text: "", start: 3, end: 1, score: 1 }]],
    ],
    ["an entity without a label", [[{ text: "a", start: 0, end: 1, score: 1 }]]],
    ["a non-finite score", [[{ label: "X", text: "a", start: 0, end: 1, score: Number.NaN }]]],
    ["fewer lists than inputs", []],
  ])("rejects %s", async (_what, entities) => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, entities, ...accounting(1) });
    };
    await expect(client.extract({ model: "e", inputs: ["a"] })).rejects.toBeInstanceOf(
      SidecarProtocolError,
    );
  });
});

describe("load of the new families", () => {
  it("reads labels for classify and extract, and the context length for generate", async () => {
    peer.onRequest = (req, p) => {
      const common = {
        id: req.id,
        ok: true,
        model: req.model,
        max_input_tokens: 512,
        memory_bytes: 1,
        load_us: 1,
      };
      if (req.model === "c") p.send({ ...common, family: "classify", dim: 2, labels: ["a", "b"] });
      else p.send({ ...common, family: "generate", dim: 49152, context_tokens: 8192 });
    };
    await expect(client.load("c", "/m/c")).resolves.toMatchObject({
      family: "classify",
      labels: ["a", "b"],
    });
    await expect(client.load("g", "/m/g")).resolves.toMatchObject({
      family: "generate",
      contextTokens: 8192,
    });
  });

  it("rejects a classify model without labels", async () => {
    peer.onRequest = (req, p) => {
      p.send({
        id: req.id,
        ok: true,
        model: "c",
        family: "classify",
        dim: 2,
        max_input_tokens: 512,
        memory_bytes: 1,
        load_us: 1,
      });
    };
    await expect(client.load("c", "/m/c")).rejects.toBeInstanceOf(SidecarProtocolError);
  });
});
