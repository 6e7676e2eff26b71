import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { compileWorkload, type Workload } from "@shoal/loadgen";
import { describe, expect, it } from "vitest";
import { fleetModels, SCENARIOS, workloadPath } from "./scenarios.js";

// The files themselves, read as the bench reads them: a shipped workload that no longer
// compiles is found here rather than minutes into a bench run.
const dir = join(import.meta.dirname, "workloads");
const files = readdirSync(dir).filter((f) => f.endsWith(".json"));

function load(file: string): Workload {
  return compileWorkload(JSON.parse(readFileSync(join(dir, file), "utf8")));
}

describe("the shipped workloads", () => {
  it.each(SCENARIOS)("include the %s scenario's default", (scenario) => {
    expect(files).toContain(basename(workloadPath(scenario)));
  });

  // result.json and the charts are labelled with the name, not the file.
  it.each(files)("%s compiles, named as its file", (file) => {
    expect(load(file).name).toBe(basename(file, ".json"));
  });

  it.each(files.filter((f) => f.startsWith("fleet")))(
    "%s is a workload the fleet scenario takes",
    (file) => {
      expect(fleetModels(load(file)).length).toBeGreaterThan(0);
    },
  );
});
