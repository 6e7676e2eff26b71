import { describe, expect, it } from "vitest";
import { isOutOfMemoryMessage, LoadFailures } from "./load-outcome.js";

describe("isOutOfMemoryMessage", () => {
  it.each([
    ["CUDA_ERROR_OUT_OF_MEMORY: out of memory", true],
    ["DriverError(CUDA_ERROR_OUT_OF_MEMORY)", true],
    ["memory allocation failed", true],
    ["OOM while loading weights", true],
    ["config.json: missing field hidden_size", false],
    ["bloom filter", false],
  ])("%s → %s", (message, expected) => {
    expect(isOutOfMemoryMessage(message)).toBe(expected);
  });
});

describe("LoadFailures", () => {
  it("retries the first out-of-memory, then reports the model unplaceable", () => {
    const f = new LoadFailures();
    expect(f.failed("a", "out-of-memory", "oom")).toEqual({ next: "retry" });
    expect(f.failed("a", "out-of-memory", "oom")).toEqual({
      next: "unplaceable",
      message: "out of memory twice, after evicting to make room: oom",
    });
    // The count starts again after giving up, so a later cooldown retry gets its retry too.
    expect(f.failed("a", "out-of-memory", "oom")).toEqual({ next: "retry" });
  });

  it("blocks a model whose load failed for another reason, without a retry", () => {
    const f = new LoadFailures();
    expect(f.failed("a", "failed", "bad weights")).toEqual({
      next: "blocked",
      message: "bad weights",
    });
  });

  it("forgets failures once a load succeeds, and counts models apart", () => {
    const f = new LoadFailures();
    expect(f.failed("a", "out-of-memory", "x")).toEqual({ next: "retry" });
    expect(f.failed("b", "out-of-memory", "x")).toEqual({ next: "retry" });
    f.succeeded("a");
    expect(f.failed("a", "out-of-memory", "x")).toEqual({ next: "retry" });
    expect(f.failed("b", "out-of-memory", "x")).toMatchObject({ next: "unplaceable" });
  });
});
