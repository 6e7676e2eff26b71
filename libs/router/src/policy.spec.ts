import { describe, expect, it } from "vitest";
import { Chooser } from "./policy.js";
import { WorkerView } from "./worker-view.js";

function view(workers: readonly string[]): WorkerView {
  const v = new WorkerView();
  for (const w of workers) v.join(w, ["m"]);
  return v;
}

describe("WorkerView", () => {
  it("counts sends at once and completions only at a refresh", () => {
    const v = view(["a"]);
    v.sent("a");
    v.sent("a");
    expect(v.outstanding("a")).toBe(2);
    v.report("a", 2);
    expect(v.outstanding("a")).toBe(2);
    v.refresh();
    expect(v.outstanding("a")).toBe(0);
  });

  it("counts a message of several items as that many items, as workers report them", () => {
    const v = view(["a"]);
    v.sent("a", 5);
    v.report("a", 3);
    v.refresh();
    expect(v.outstanding("a")).toBe(2);
    v.unsent("a", 2);
    expect(v.outstanding("a")).toBe(0);
  });

  it("takes back a send that did not happen", () => {
    const v = view(["a"]);
    v.sent("a");
    v.unsent("a");
    v.unsent("a");
    expect(v.outstanding("a")).toBe(0);
  });

  it("ignores reports from workers that never joined and reports that go backwards", () => {
    const v = view(["a"]);
    v.report("ghost", 5);
    v.sent("a");
    v.report("a", 1);
    v.report("a", 0);
    v.refresh();
    expect(v.outstanding("a")).toBe(0);
    expect(v.serving("m")).toEqual(["a"]);
  });

  it("lists the workers serving a model", () => {
    const v = new WorkerView();
    v.join("a", ["m", "n"]);
    v.join("b", ["n"]);
    expect(v.serving("n")).toEqual(["a", "b"]);
    expect(v.serving("m")).toEqual(["a"]);
    expect(v.serving("x")).toEqual([]);
  });
});

describe("Chooser", () => {
  const workers = ["a", "b", "c"];

  it("round-robin takes each in turn whatever the load", () => {
    const v = view(workers);
    for (let i = 0; i < 5; i++) v.sent("a");
    const c = new Chooser("round-robin");
    expect([0, 1, 2, 3].map(() => c.choose(workers, v))).toEqual(["a", "b", "c", "a"]);
  });

  it("least-outstanding takes the least loaded, and spreads ties", () => {
    const v = view(workers);
    v.sent("a");
    v.sent("b");
    const c = new Chooser("least-outstanding");
    expect(c.choose(workers, v)).toBe("c");
    const idle = view(workers);
    const picks = [0, 1, 2].map(() => c.choose(workers, idle));
    expect(new Set(picks).size).toBe(3);
  });

  it("least-outstanding herds onto a worker the stale view still shows idle", () => {
    const v = view(workers);
    for (const w of workers) for (let i = 0; i < 4; i++) v.sent(w);
    v.report("c", 4);
    v.refresh();
    const c = new Chooser("least-outstanding");
    // c finished its 4 and looks idle: it takes every item until its sends catch up, while
    // the others, perhaps also done by now, get nothing until the next refresh.
    const picks: string[] = [];
    for (let i = 0; i < 4; i++) {
      const w = c.choose(workers, v);
      v.sent(w);
      picks.push(w);
    }
    expect(picks).toEqual(["c", "c", "c", "c"]);
  });

  it("power-of-two picks the less loaded of two distinct candidates", () => {
    const v = view(workers);
    for (let i = 0; i < 3; i++) v.sent("a");
    // random() → 0 picks a first; the second draw 0 picks the next one, b.
    const c = new Chooser("power-of-two", () => 0);
    expect(c.choose(workers, v)).toBe("b");
    const counts = new Map<string, number>();
    const seeded = new Chooser("power-of-two");
    for (let i = 0; i < 3000; i++) {
      const w = seeded.choose(workers, v);
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
    // a is busier than both others, so it only wins when it is not drawn at all: never.
    expect(counts.get("a")).toBeUndefined();
  });

  it("random ignores load and spreads evenly", () => {
    const v = view(workers);
    for (let i = 0; i < 50; i++) v.sent("a");
    const c = new Chooser("random");
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const w = c.choose(workers, v);
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
    // a, far busier than the others, still gets its third.
    for (const w of workers)
      expect(Math.abs((counts.get(w) ?? 0) / 3000 - 1 / 3)).toBeLessThan(0.05);
    expect(new Chooser("random", () => 0.99).choose(workers, v)).toBe("c");
  });

  it("refuses an empty candidate list", () => {
    expect(() => new Chooser("round-robin").choose([], view([]))).toThrow(/no candidates/);
  });
});
