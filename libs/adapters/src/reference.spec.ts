import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkAdapterName,
  formatAdapterReference,
  InvalidModelReferenceError,
  parseModelReference,
  type ModelReference,
} from "./reference.js";

const SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct";

const baseId = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !s.includes(":"));
const adapterName = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,63}$/);
const version = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });

describe("parseModelReference", () => {
  it.each<[string, ModelReference]>([
    [SMOL, { base: SMOL }],
    [`${SMOL}:support-bot`, { base: SMOL, adapter: { name: "support-bot" } }],
    [`${SMOL}:support-bot@2`, { base: SMOL, adapter: { name: "support-bot", version: 2 } }],
    ["m:a_b-9@9007199254740991", { base: "m", adapter: { name: "a_b-9", version: 2 ** 53 - 1 } }],
  ])("parses %s", (model, expected) => {
    expect(parseModelReference(model)).toEqual(expected);
  });

  it.each([
    ["", "names no base model"],
    [":bot", "names no base model"],
    [`${SMOL}:`, "adapter name"],
    [`${SMOL}:Bot`, "adapter name"],
    [`${SMOL}:-bot`, "adapter name"],
    [`${SMOL}:${"a".repeat(65)}`, "adapter name"],
    [`${SMOL}:bot:extra`, "adapter name"],
    [`${SMOL}:bot@`, "adapter version"],
    [`${SMOL}:bot@0`, "adapter version"],
    [`${SMOL}:bot@02`, "adapter version"],
    [`${SMOL}:bot@-1`, "adapter version"],
    [`${SMOL}:bot@1.5`, "adapter version"],
    [`${SMOL}:bot@9007199254740992`, "adapter version"],
    [`${SMOL}:bot@1@2`, "adapter version"],
  ])("refuses %j", (model, message) => {
    expect(() => parseModelReference(model)).toThrow(InvalidModelReferenceError);
    expect(() => parseModelReference(model)).toThrow(message);
  });

  it("round-trips every valid reference through formatAdapterReference", () => {
    fc.assert(
      fc.property(baseId, adapterName, fc.option(version, { nil: undefined }), (base, name, v) => {
        const adapter = v === undefined ? { name } : { name, version: v };
        const model = formatAdapterReference(base, adapter);
        expect(parseModelReference(model)).toEqual({ base, adapter });
      }),
    );
  });

  it("either refuses a string or parses it to something that formats back to it", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (model) => {
        let parsed: ModelReference;
        try {
          parsed = parseModelReference(model);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidModelReferenceError);
          return;
        }
        const again =
          parsed.adapter === undefined
            ? parsed.base
            : formatAdapterReference(parsed.base, parsed.adapter);
        expect(again).toBe(model);
      }),
    );
  });
});

describe("formatAdapterReference", () => {
  it("refuses parts that could not be parsed back", () => {
    expect(() => formatAdapterReference("a:b", { name: "x" })).toThrow(InvalidModelReferenceError);
    expect(() => formatAdapterReference("", { name: "x" })).toThrow(InvalidModelReferenceError);
    expect(() => formatAdapterReference("m", { name: "X" })).toThrow(InvalidModelReferenceError);
    expect(() => formatAdapterReference("m", { name: "x", version: 0 })).toThrow(
      InvalidModelReferenceError,
    );
  });

  it("checkAdapterName passes valid names through", () => {
    expect(checkAdapterName("support-bot_2")).toBe("support-bot_2");
  });
});
