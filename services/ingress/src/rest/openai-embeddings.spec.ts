import { compileCatalog, type ModelEntry } from "@shoal/config";
import type { EmbedOutcome } from "@shoal/gateway";
import { describe, expect, it } from "vitest";
import { jsonWithFloats } from "./json-floats.js";
import { embeddingsResponse, outputWidth, parseEmbeddingsRequest } from "./openai-embeddings.js";

const catalog = compileCatalog(
  {
    models: [
      {
        id: "plain",
        key: "plain",
        family: "embedding",
        dimensions: 4,
        maxInputTokens: 8,
        source: { kind: "dir", path: "/m" },
      },
      {
        id: "mrl",
        key: "mrl",
        family: "embedding",
        dimensions: 4,
        maxInputTokens: 8,
        matryoshkaDimensions: [2],
        source: { kind: "dir", path: "/n" },
      },
    ],
  },
  { modelsDir: "/cache" },
);
const entry = (id: string): ModelEntry => {
  const model = catalog.find(id);
  if (model === undefined) throw new Error(`no ${id}`);
  return model;
};
const plain = entry("plain");
const mrl = entry("mrl");

function outcome(rows: number[][]): EmbedOutcome {
  const floats = new Float32Array(rows.flat());
  return {
    requestId: "r",
    model: mrl,
    dim: rows[0]?.length ?? 0,
    embeddings: new Uint8Array(floats.buffer),
    tokens: rows.map(() => 3),
    truncated: rows.map(() => false),
    timings: { annotateUs: 0, queueUs: 0, batchUs: 0, computeUs: 0, totalUs: 0 },
  };
}

describe("parseEmbeddingsRequest input shapes", () => {
  it.each([
    ["a string", "a", { inputs: ["a"] }, true],
    ["strings", ["a", "b"], { inputs: ["a", "b"] }, false],
    ["one list of ids", [1, 2], { inputs: [], tokenInputs: [[1, 2]] }, true],
    ["lists of ids", [[1], [2, 3]], { inputs: [], tokenInputs: [[1], [2, 3]] }, false],
  ])("reads %s", (_name, input, call, single) => {
    const parsed = parseEmbeddingsRequest({ model: "m", input });
    expect(parsed.call).toMatchObject(call);
    expect(parsed.single).toBe(single);
  });
  it.each([
    ["mixed", ["a", [1]]],
    ["an object", { a: 1 }],
    ["bytes", new Uint8Array(2)],
    ["lists of strings", [["a"]]],
  ])("refuses %s", (_name, input) => {
    expect(() => parseEmbeddingsRequest({ model: "m", input })).toThrow(/`input` must be/);
  });
  it("reads prompt_name, which must be a string", () => {
    expect(
      parseEmbeddingsRequest({ model: "m", input: "a", prompt_name: "query" }).call.promptName,
    ).toBe("query");
    expect(parseEmbeddingsRequest({ model: "m", input: "a" }).call).not.toHaveProperty(
      "promptName",
    );
    expect(() => parseEmbeddingsRequest({ model: "m", input: "a", prompt_name: 1 })).toThrow(
      "`prompt_name` must be a string",
    );
  });
});

describe("outputWidth", () => {
  it("serves the native width with or without `dimensions`", () => {
    expect(outputWidth(plain, undefined)).toBe(4);
    expect(outputWidth(plain, 4)).toBe(4);
  });
  it("serves a listed Matryoshka width", () => {
    expect(outputWidth(mrl, 2)).toBe(2);
  });
  it("refuses truncation of a model not trained for it, and unlisted widths", () => {
    expect(() => outputWidth(plain, 2)).toThrow(/cannot be truncated/);
    expect(() => outputWidth(mrl, 3)).toThrow(/serves `dimensions` 2, 4; got 3/);
  });
});

describe("embeddingsResponse", () => {
  it("cuts each row to its leading coordinates and renormalises", () => {
    const body = JSON.parse(
      jsonWithFloats(
        embeddingsResponse(
          outcome([
            [3, 4, 9, 9],
            [0, 0, 1, 0],
          ]),
          "float",
          2,
        ),
      ).toString(),
    ) as {
      data: { embedding: number[] }[];
    };
    // Read as float32, as the values were computed.
    expect(body.data[0]?.embedding.map(Math.fround)).toEqual([0.6, 0.8].map(Math.fround));
    // A prefix of zeros stays zero rather than dividing by zero.
    expect(body.data[1]?.embedding).toEqual([0, 0]);
  });
  it("hands out the answer's own bytes in binary at the native width", () => {
    const o = outcome([[1, 2, 3, 4]]);
    const body = embeddingsResponse(o, "binary") as { data: { embedding: Uint8Array }[] };
    const row = body.data[0]?.embedding;
    expect(row?.buffer).toBe(o.embeddings.buffer);
    expect(row?.byteLength).toBe(16);
  });
});
