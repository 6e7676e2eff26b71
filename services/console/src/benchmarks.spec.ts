import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tempDir } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { Benchmarks } from "./benchmarks.js";

describe("Benchmarks", () => {
  it("lists results with their own charts, and serves only the charts it listed", async () => {
    const dir = await tempDir("console-bench");
    const out = join(dir, "bench-out");
    await mkdir(out);
    await writeFile(
      join(dir, "fleet-result.json"),
      JSON.stringify({ scenario: "fleet", pull_over_router: 1.31, modes: {} }),
    );
    await writeFile(join(dir, "fleet-throughput.svg"), "<svg/>");
    await writeFile(join(dir, "fleet-fine-throughput.svg"), "<svg/>");
    await writeFile(join(dir, "broken-result.json"), "{not json");
    await writeFile(join(out, "result.json"), JSON.stringify({ scenario: "minilm" }));
    await writeFile(join(out, "latency.svg"), "<svg/>");
    const benchmarks = new Benchmarks([dir, out, join(dir, "missing")]);
    const views = await benchmarks.scan();
    const byFile = Object.fromEntries(views.map((v) => [v.file, v]));
    expect(Object.keys(byFile).sort()).toEqual(
      [
        join("bench-out", "result.json"),
        join(dir.split("/").at(-1) ?? "", "broken-result.json"),
        join(dir.split("/").at(-1) ?? "", "fleet-result.json"),
      ].sort(),
    );
    const fleet = views.find((v) => v.file.endsWith("fleet-result.json"));
    expect(fleet).toMatchObject({
      scenario: "fleet",
      headline: { pull_over_router: 1.31 },
      charts: ["0/fleet-throughput.svg"],
    });
    expect(views.find((v) => v.file.endsWith("broken-result.json"))?.headline).toEqual({});
    expect(views.find((v) => v.scenario === "minilm")?.charts).toEqual(["1/latency.svg"]);
    expect(benchmarks.chart("0/fleet-throughput.svg")).toBe(join(dir, "fleet-throughput.svg"));
    expect(benchmarks.chart("0/../../etc/passwd")).toBeUndefined();
    expect(benchmarks.chart("0/fleet-result.json")).toBeUndefined();
  });
});
