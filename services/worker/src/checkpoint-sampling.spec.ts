import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@shoal/telemetry";
import { describe, expect, it } from "vitest";
import { checkpointSampling } from "./checkpoint-sampling.js";

const logger = createLogger({ service: "test", level: "silent" });

async function checkpoint(config?: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "shoal-checkpoint-"));
  if (config !== undefined) await writeFile(join(dir, "generation_config.json"), config);
  return dir;
}

describe("checkpointSampling", () => {
  it("reads the sampling fields of the checkpoint's generation_config.json", async () => {
    const dir = await checkpoint(
      JSON.stringify({ do_sample: true, temperature: 0.6, top_p: 0.9, eos_token_id: 2 }),
    );
    expect(await checkpointSampling(dir, logger)).toEqual({ temperature: 0.6, topP: 0.9 });
  });

  it("has none when the checkpoint ships no file, or one that is not JSON", async () => {
    expect(await checkpointSampling(await checkpoint(), logger)).toEqual({});
    expect(await checkpointSampling(await checkpoint("{ not json"), logger)).toEqual({});
  });

  it("keeps the valid fields of a file with an out-of-range one", async () => {
    const dir = await checkpoint(JSON.stringify({ temperature: 9, top_k: 20 }));
    expect(await checkpointSampling(dir, logger)).toEqual({ topK: 20 });
  });
});
