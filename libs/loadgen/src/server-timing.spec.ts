import { describe, expect, it } from "vitest";
import { parseServerTiming } from "./server-timing.js";

describe("parseServerTiming", () => {
  it("reads every metric's duration, in ms", () => {
    expect(
      parseServerTiming(
        "annotate;dur=0.980, queue;dur=12.5, batch;dur=0.020, compute;dur=11.800, total;dur=25.3",
      ),
    ).toEqual({ annotate: 0.98, queue: 12.5, batch: 0.02, compute: 11.8, total: 25.3 });
  });

  it("takes dur wherever it stands among a metric's parameters", () => {
    expect(parseServerTiming('db;desc="primary";dur=3, cache;dur=1;desc=hit')).toEqual({
      db: 3,
      cache: 1,
    });
  });

  it.each<[string, string | null | undefined]>([
    ["no header", null],
    ["an empty header", ""],
    ["a metric without dur", "miss"],
    ["a negative or non-numeric dur", "a;dur=-1, b;dur=x, c;dur="],
  ])("returns nothing usable for %s", (_what, header) => {
    expect(parseServerTiming(header)).toEqual({});
  });
});
