import { describe, expect, it } from "vitest";
import type { ModelEntry } from "@shoal/config";
import { withComputeThreads } from "./compute-threads.js";

const model = (modelThreads?: number, family: ModelEntry["family"] = "embedding") =>
  ({
    family,
    serving: modelThreads === undefined ? {} : { modelThreads },
  }) as unknown as ModelEntry;

describe("withComputeThreads", () => {
  it("shares the cores among the most threads a model runs", () => {
    expect(withComputeThreads({}, [model(2), model()], 2)).toEqual({
      SHOAL_SIDECAR_COMPUTE_THREADS: "1",
    });
    expect(withComputeThreads({}, [model(2)], 16)["SHOAL_SIDECAR_COMPUTE_THREADS"]).toBe("8");
    expect(withComputeThreads({}, [model(4)], 2)["SHOAL_SIDECAR_COMPUTE_THREADS"]).toBe("1");
  });

  it("leaves every core to each batch when no model runs several threads", () => {
    expect(withComputeThreads({ A: "1" }, [model(), model(1)], 8)).toEqual({ A: "1" });
  });

  it("leaves every core to each batch when a generator shares the sidecar", () => {
    expect(withComputeThreads({}, [model(2), model(1, "generator")], 2)).toEqual({});
  });

  it("keeps what the operator set", () => {
    const env = { SHOAL_SIDECAR_COMPUTE_THREADS: "3" };
    expect(withComputeThreads(env, [model(2)], 8)).toBe(env);
  });
});
