import { compileCatalog, type ModelEntry } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { withPrompt } from "./embedding-prompt.js";

function model(extra: Record<string, unknown>): ModelEntry {
  const raw = { id: "e5", key: "e5", family: "embedding", dimensions: 8, maxInputTokens: 16 };
  const source = { kind: "dir", path: "/m" };
  return compileCatalog({ models: [{ ...raw, source, ...extra }] }, { modelsDir: "/m" })
    .models[0] as ModelEntry;
}

const E5 = { prompts: { query: "query: ", passage: "passage: " } };
const call = { model: "e5", inputs: ["tides", "reefs"] };

describe("withPrompt", () => {
  it("puts the named prefix before every text input", () => {
    expect(withPrompt(model(E5), call, "query").inputs).toEqual(["query: tides", "query: reefs"]);
  });

  it("uses the default prompt when none is named, and nothing when there is none", () => {
    const withDefault = model({ ...E5, defaultPrompt: "passage" });
    expect(withPrompt(withDefault, call, undefined).inputs).toEqual([
      "passage: tides",
      "passage: reefs",
    ]);
    expect(withPrompt(withDefault, call, "query").inputs[0]).toBe("query: tides");
    expect(withPrompt(model(E5), call, undefined)).toBe(call);
  });

  it("leaves token ids as they are, even under a default prompt", () => {
    const ids = { model: "e5", inputs: [], tokenInputs: [[101, 7, 102]] };
    expect(withPrompt(model({ ...E5, defaultPrompt: "query" }), ids, undefined)).toBe(ids);
    expect(() => withPrompt(model(E5), ids, "query")).toThrow(/text inputs, not token ids/);
  });

  it("refuses a prompt the model does not have, naming those it has", () => {
    expect(() => withPrompt(model(E5), call, "document")).toThrow(
      'model "e5" has the prompts query, passage; got "document"',
    );
    expect(() => withPrompt(model({}), call, "query")).toThrow(/has no prompts/);
    expect(() => withPrompt(model(E5), call, "__proto__")).toThrow(/got "__proto__"/);
  });
});
