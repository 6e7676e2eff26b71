import { existsSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@shoal/config";
import { beforeAll, describe, expect, it } from "vitest";
import { bundleFromEnv, catalogFromEnv } from "./catalog.js";
import { bundlePath } from "./paths.js";

const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
let dir: string;
let bundleFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "shoal-bundle-"));
  bundleFile = join(dir, "tuned.json");
  await writeFile(
    bundleFile,
    JSON.stringify({
      profile: "test-box",
      models: { [MINILM]: { serving: { batchTargetMs: 77 } } },
    }),
  );
});

describe("bundleFromEnv", () => {
  it("reads SHOAL_BUNDLE and lays it over the shipped catalog", async () => {
    const catalog = await catalogFromEnv({ SHOAL_BUNDLE: bundleFile, SHOAL_HOME: dir });
    expect(catalog.find(MINILM)?.serving?.batchTargetMs).toBe(77);
    expect(catalog.bundle).toEqual({ profile: "test-box", path: bundleFile });
  });

  it("applies no bundle with SHOAL_BUNDLE=none", async () => {
    await expect(bundleFromEnv({ SHOAL_BUNDLE: "none" })).resolves.toBeUndefined();
    const catalog = await catalogFromEnv({ SHOAL_BUNDLE: "none", SHOAL_HOME: dir });
    expect(catalog.bundle).toBeUndefined();
  });

  it("picks bundles/<profile>.json from the device when nothing names one", async () => {
    const cpu = await bundleFromEnv({});
    expect(cpu?.source).toEqual({ profile: "cpu", path: bundlePath("cpu") });
    // A CUDA worker gets the CUDA bundle, or defaults where none is shipped; never the CPU one.
    const cuda = await bundleFromEnv({ SHOAL_DEVICE: "cuda:0" });
    expect(cuda?.source.path).toBe(existsSync(bundlePath("cuda")) ? bundlePath("cuda") : undefined);
  });

  it("refuses a named profile that has no bundle, and a malformed profile name", async () => {
    await expect(bundleFromEnv({ SHOAL_HARDWARE_PROFILE: "no-such-box" })).rejects.toThrow(
      /SHOAL_HARDWARE_PROFILE=no-such-box: no bundle at .*no-such-box\.json/,
    );
    await expect(bundleFromEnv({ SHOAL_HARDWARE_PROFILE: "../etc" })).rejects.toThrow(ConfigError);
  });

  it("refuses a bundle path that cannot be read, naming it", async () => {
    await expect(bundleFromEnv({ SHOAL_BUNDLE: join(dir, "absent.json") })).rejects.toThrow(
      /bundle .*absent\.json: cannot read JSON/,
    );
  });
});
