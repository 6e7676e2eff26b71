import { describe, expect, it } from "vitest";
import { compileBatchBudget, DEFAULT_BATCH_BUDGET } from "./budget.js";

describe("compileBatchBudget", () => {
  it("fills defaults", () => {
    expect(compileBatchBudget()).toEqual(DEFAULT_BATCH_BUDGET);
    expect(compileBatchBudget({ maxInputs: 8 })).toEqual({ maxPaddedTokens: 16384, maxInputs: 8 });
  });

  it("keeps given values", () => {
    expect(compileBatchBudget({ maxPaddedTokens: 4096, maxInputs: 32 })).toEqual({
      maxPaddedTokens: 4096,
      maxInputs: 32,
    });
  });

  it("returns a frozen budget", () => {
    expect(Object.isFrozen(compileBatchBudget({ maxInputs: 2 }))).toBe(true);
  });

  it.each([
    {
      options: { maxPaddedTokens: 0 },
      message: "maxPaddedTokens must be a positive integer, got 0",
    },
    {
      options: { maxPaddedTokens: -5 },
      message: "maxPaddedTokens must be a positive integer, got -5",
    },
    {
      options: { maxPaddedTokens: 1.5 },
      message: "maxPaddedTokens must be a positive integer, got 1.5",
    },
    {
      options: { maxInputs: Number.NaN },
      message: "maxInputs must be a positive integer, got NaN",
    },
    {
      options: { maxInputs: Number.POSITIVE_INFINITY },
      message: "maxInputs must be a positive integer, got Infinity",
    },
    { options: { maxInputs: 2 ** 60 }, message: "maxInputs must be a positive integer" },
  ])("rejects $options", ({ options, message }) => {
    expect(() => compileBatchBudget(options)).toThrow(RangeError);
    expect(() => compileBatchBudget(options)).toThrow(message);
  });
});
