import { describe, expect, it } from "vitest";
import { ConfigError } from "./errors.js";
import { compileSamplingDefaults, samplingFromGenerationConfig } from "./sampling-defaults.js";

const where = "catalog.models[0].sampling";

describe("compileSamplingDefaults", () => {
  it("keeps what a generator's entry sets, and nothing when it sets nothing", () => {
    expect(compileSamplingDefaults(undefined, "generator", where)).toBeUndefined();
    expect(
      compileSamplingDefaults(
        { temperature: 0.2, topP: 0.9, topK: 50, minP: 0.05, repetitionPenalty: 1.1 },
        "generator",
        where,
      ),
    ).toEqual({ temperature: 0.2, topP: 0.9, topK: 50, minP: 0.05, repetitionPenalty: 1.1 });
    expect(compileSamplingDefaults({ temperature: 0 }, "generator", where)).toEqual({
      temperature: 0,
    });
  });

  it.each([
    [{ temperature: 2.5 }, /sampling.temperature must be a number in \[0, 2\]/],
    [{ temperature: "low" }, /sampling.temperature must be a number/],
    [{ topP: 0 }, /sampling.topP must be a number in \(0, 1\]/],
    [{ minP: -0.1 }, /sampling.minP must be a number in \[0, 1\]/],
    [{ repetitionPenalty: 0 }, /sampling.repetitionPenalty must be a number in \(0, 2\]/],
    [{ topK: 1.5 }, /sampling.topK must be a non-negative integer/],
    [{ top_p: 0.9 }, /sampling.top_p is not a sampling setting/],
    [[0.2], /sampling must be an object/],
  ])("refuses %j by name", (raw, message) => {
    expect(() => compileSamplingDefaults(raw, "generator", where)).toThrow(ConfigError);
    expect(() => compileSamplingDefaults(raw, "generator", where)).toThrow(message);
  });

  it("refuses sampling on a model that does not generate", () => {
    expect(() => compileSamplingDefaults({ temperature: 0.2 }, "embedding", where)).toThrow(
      /sampling is only for family generator, not embedding/,
    );
  });
});

describe("samplingFromGenerationConfig", () => {
  it("reads a checkpoint's five sampling fields and nothing else", () => {
    // Qwen2.5-Instruct's generation_config.json.
    const qwen = {
      bos_token_id: 151643,
      do_sample: true,
      eos_token_id: [151645, 151643],
      repetition_penalty: 1.05,
      temperature: 0.7,
      top_p: 0.8,
      top_k: 20,
      transformers_version: "4.37.0",
    };
    expect(samplingFromGenerationConfig(qwen)).toEqual({
      defaults: { temperature: 0.7, topP: 0.8, topK: 20, repetitionPenalty: 1.05 },
      refused: [],
    });
    expect(samplingFromGenerationConfig({ bos_token_id: 1, eos_token_id: 2 })).toEqual({
      defaults: {},
      refused: [],
    });
  });

  it("leaves out what is out of range, and says what", () => {
    const { defaults, refused } = samplingFromGenerationConfig({ temperature: 7, top_p: 0.9 });
    expect(defaults).toEqual({ topP: 0.9 });
    expect(refused).toEqual([expect.stringMatching(/temperature must be a number in \[0, 2\]/)]);
    expect(samplingFromGenerationConfig([1]).refused).toHaveLength(1);
  });
});
