import type { ModelEntry } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { servingSettings } from "../src/serving-settings.js";

const model = (serving: ModelEntry["serving"]): ModelEntry =>
  ({ id: "m", key: "m", family: "embedding", serving }) as ModelEntry;

describe("servingSettings", () => {
  it("runs on the defaults when neither the worker nor the model sets anything", () => {
    expect(servingSettings({}, model({}))).toEqual({
      budget: { maxPaddedTokens: 16384, maxInputs: 1024 },
      batchTargetMs: 250,
      maxFillWaitMs: 2,
      pullBatch: 64,
      maxBatchesInFlight: 1,
      modelThreads: 1,
      batchCostPrior: undefined,
    });
  });

  it("takes the model's tuned settings over the defaults", () => {
    const tuned = model({
      maxPaddedTokens: 4096,
      maxInputs: 128,
      batchTargetMs: 120,
      maxFillWaitMs: 0,
      fetchSize: 16,
      batchesInFlight: 2,
      modelThreads: 3,
      batchCostPrior: { fixedUs: 200_000, perSequenceUs: 0, perPaddedTokenUs: 500 },
    });
    expect(servingSettings({}, tuned)).toEqual({
      budget: { maxPaddedTokens: 4096, maxInputs: 128 },
      batchTargetMs: 120,
      maxFillWaitMs: 0,
      pullBatch: 16,
      // A batch for every model thread, above the tuned two.
      maxBatchesInFlight: 3,
      modelThreads: 3,
      batchCostPrior: { fixedUs: 200_000, perSequenceUs: 0, perPaddedTokenUs: 500 },
    });
  });

  it("lets each setting the worker names explicitly win over the model's", () => {
    const tuned = model({ maxPaddedTokens: 4096, batchTargetMs: 120, batchesInFlight: 2 });
    const settings = servingSettings(
      { budget: { maxPaddedTokens: 512 }, batchTargetMs: 500 },
      tuned,
    );
    expect(settings.budget.maxPaddedTokens).toBe(512);
    expect(settings.batchTargetMs).toBe(500);
    expect(settings.maxBatchesInFlight).toBe(2);
    const threaded = model({ batchesInFlight: 1, modelThreads: 2 });
    expect(servingSettings({ maxBatchesInFlight: 1 }, threaded).maxBatchesInFlight).toBe(1);
  });
});
