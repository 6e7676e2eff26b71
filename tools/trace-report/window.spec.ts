import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tempDir } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { benchWindow, parseTime, WindowError } from "./window.js";

const NOW = new Date("2026-12-06T12:00:00.000Z");

describe("parseTime", () => {
  it("reads now, relative times and ISO 8601, and refuses anything else", () => {
    expect(parseTime("now", NOW)).toBe(NOW);
    expect(parseTime("-90s", NOW).toISOString()).toBe("2026-12-06T11:58:30.000Z");
    expect(parseTime("-5m", NOW).toISOString()).toBe("2026-12-06T11:55:00.000Z");
    expect(parseTime("-1.5h", NOW).toISOString()).toBe("2026-12-06T10:30:00.000Z");
    expect(parseTime("2026-12-06T09:00:00Z", NOW).toISOString()).toBe("2026-12-06T09:00:00.000Z");
    for (const bad of ["5m", "-5d", "yesterday", "12", ""]) {
      expect(() => parseTime(bad, NOW), bad).toThrow(WindowError);
    }
  });
});

describe("benchWindow", () => {
  it("spans a mode's steps, or one step, from the bench's result.json", async () => {
    const path = join(await tempDir("bench-window"), "result.json");
    const step = (rps: number, from: string, to: string) => ({
      offered_rps: rps,
      window: { from, to },
    });
    await writeFile(
      path,
      JSON.stringify({
        modes: {
          pull: {
            steps: [
              step(50, "2026-12-06T10:00:00Z", "2026-12-06T10:00:20Z"),
              step(60, "2026-12-06T10:00:21Z", "2026-12-06T10:00:41Z"),
            ],
          },
        },
      }),
    );
    const all = await benchWindow(path);
    expect([all.from.toISOString(), all.to.toISOString()]).toEqual([
      "2026-12-06T10:00:00.000Z",
      "2026-12-06T10:00:41.000Z",
    ]);
    const one = await benchWindow(path, undefined, 60);
    expect(one.from.toISOString()).toBe("2026-12-06T10:00:21.000Z");
    await expect(benchWindow(path, undefined, 70)).rejects.toThrow(/no step offered 70/);
    await expect(benchWindow(path, "router")).rejects.toThrow(WindowError);
    await expect(benchWindow(join(path, "..", "missing.json"))).rejects.toThrow(/cannot read/);
  });
});
