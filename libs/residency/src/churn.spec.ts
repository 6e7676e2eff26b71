import { expect, it } from "vitest";
import { ChurnCounter } from "./churn.js";

it("counts loads, evictions, loads in the last minute and reloads soon after an eviction", () => {
  const c = new ChurnCounter(10_000);
  c.loaded("a", 0);
  c.loaded("b", 1000);
  c.evicted("a", 2000);
  c.loaded("a", 5000); // 3 s after its eviction: thrash
  c.evicted("b", 6000);
  c.loaded("b", 30_000); // 24 s after: outside the window
  expect(c.report(30_000)).toEqual({ loads: 4, evictions: 2, loadsLastMinute: 4, thrash: 1 });
  expect(c.report(62_000)).toEqual({ loads: 4, evictions: 2, loadsLastMinute: 2, thrash: 1 });
});
