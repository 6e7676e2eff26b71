import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { samplingFromGenerationConfig, type SamplingDefaults } from "@shoal/config";
import type { Logger } from "@shoal/telemetry";

/**
 * The sampling defaults a generator's checkpoint ships in `generation_config.json`, the
 * last layer under a request's own values and the catalog's: read once when the model's puller
 * starts. None when the checkpoint has no such file (a GGUF has none) or it cannot be read.
 */
export async function checkpointSampling(dir: string, logger: Logger): Promise<SamplingDefaults> {
  const path = join(dir, "generation_config.json");
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return {};
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    logger.warn(
      { err, path },
      "generation_config.json is not JSON; its sampling defaults are ignored",
    );
    return {};
  }
  const { defaults, refused } = samplingFromGenerationConfig(raw);
  if (refused.length > 0) {
    logger.warn({ path, refused }, "some sampling defaults of the checkpoint are ignored");
  }
  return defaults;
}
