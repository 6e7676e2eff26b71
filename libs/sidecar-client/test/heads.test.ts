import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, startSidecar, type SidecarHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SidecarClient, SidecarError, toFloat32Array } from "../src/index.js";

// The three tiny generated head models (tools/reference/make_tiny_models.py) on the real
// sidecar, checked against what transformers on torch answered for the same inputs.

const TINY = join(repoRoot(), "tools", "reference", "fixtures");

interface Pair {
  query: string;
  document: string;
  score: number;
  tokens: number;
  truncated: boolean;
}
interface Classified {
  text: string;
  probabilities: number[];
  tokens: number;
  truncated: boolean;
}
interface Tagged {
  text: string;
  entities: { label: string; text: string; start: number; end: number; score: number }[];
}

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(TINY, `tiny-${name}.json`), "utf8"));
}

let sidecar: SidecarHandle | undefined;
let connection: SidecarClient | undefined;

function client(): SidecarClient {
  if (connection === undefined) throw new Error("sidecar did not start; see the beforeAll error");
  return connection;
}

beforeAll(async () => {
  sidecar = await startSidecar({
    models: {
      rerank: join(TINY, "tiny", "cross-encoder"),
      classify: join(TINY, "tiny", "classifier"),
      extract: join(TINY, "tiny", "ner"),
    },
  });
  connection = await SidecarClient.connect({ socketPath: sidecar.socketPath });
}, 180_000);

afterAll(async () => {
  await connection?.close();
  await sidecar?.stop();
});

describe("heads against the real sidecar", { timeout: 120_000 }, () => {
  it("scores pairs as the reference does", async () => {
    const { pairs } = fixture("cross-encoder") as { pairs: Pair[] };
    const result = await client().score({
      model: "rerank",
      queries: pairs.map((p) => p.query),
      documents: pairs.map((p) => p.document),
    });
    const scores = Array.from(toFloat32Array(result.scores));
    pairs.forEach((p, i) => {
      expect(scores[i]).toBeCloseTo(p.score, 4);
      expect(result.tokens[i]).toBe(p.tokens);
      expect(result.truncated[i]).toBe(p.truncated);
    });
  });

  it("classifies as the reference does", async () => {
    const { labels, inputs } = fixture("classifier") as {
      labels: string[];
      inputs: Classified[];
    };
    const result = await client().classify({
      model: "classify",
      inputs: inputs.map((c) => c.text),
    });
    expect(result.labels).toEqual(labels);
    const probabilities = toFloat32Array(result.probabilities);
    inputs.forEach((c, i) => {
      c.probabilities.forEach((p, j) => {
        expect(probabilities[i * labels.length + j]).toBeCloseTo(p, 4);
      });
      expect(result.tokens[i]).toBe(c.tokens);
    });
  });

  it("extracts the reference's entities", async () => {
    const { inputs } = fixture("ner") as { inputs: Tagged[] };
    const result = await client().extract({ model: "extract", inputs: inputs.map((t) => t.text) });
    inputs.forEach((t, i) => {
      const got = result.entities[i] ?? [];
      expect(got.map(({ label, text, start, end }) => ({ label, text, start, end }))).toEqual(
        t.entities.map(({ label, text, start, end }) => ({ label, text, start, end })),
      );
      got.forEach((e, j) => {
        expect(e.score).toBeCloseTo(t.entities[j]?.score ?? NaN, 4);
      });
    });
  });

  it("refuses an op on a model of another family", async () => {
    const error = await client()
      .score({ model: "classify", queries: ["q"], documents: ["d"] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SidecarError);
  });
});
