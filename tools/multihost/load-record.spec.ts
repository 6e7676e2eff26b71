import { describe, expect, it } from "vitest";
import { recoveryMs, summarize, type LoadRecord } from "./load-record.js";

const ok = (seq: number, startMs: number, endMs: number, cosine = 1): LoadRecord => ({
  seq,
  startMs,
  endMs,
  status: 200,
  attempts: 1,
  cosine,
});

describe("summarize", () => {
  it("counts the window's answers, latencies and redeliveries", () => {
    const records = [ok(0, 0, 10), ok(1, 100, 130), { ...ok(2, 200, 300), attempts: 2 }];
    const s = summarize(records, 0, 1000);
    expect(s).toMatchObject({ requests: 3, answered: 3, redelivered: 1, maxMs: 100 });
    expect(s.failed).toEqual([]);
    expect(summarize(records, 50, 150).requests).toBe(1);
  });

  it("fails errors, numbers never answered, and answers with another vector", () => {
    const records = [
      ok(0, 0, 10),
      { seq: 1, startMs: 10, endMs: 20, status: 503, attempts: 1, error: "unavailable" },
      ok(3, 30, 40, 0.2),
    ];
    const s = summarize(records, 0, 1000);
    expect(s.failed).toEqual([
      { seq: 1, status: 503, error: "unavailable" },
      { seq: 2, status: 0, error: "never answered" },
    ]);
    expect(s.wrongAnswers).toBe(1);
  });

  it("counts a request number seen twice as a duplicate answer", () => {
    expect(summarize([ok(0, 0, 10), ok(0, 0, 12)], 0, 100).duplicates).toBe(1);
  });
});

describe("recoveryMs", () => {
  it("is the time from the fault to the first answer of a request started after it", () => {
    const records = [ok(0, 0, 5000), ok(1, 1000, 9000), ok(2, 1500, 8000)];
    expect(recoveryMs(records, 900)).toBe(7100);
    expect(recoveryMs(records, 2000)).toBeUndefined();
  });
});
