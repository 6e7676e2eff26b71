import { afterEach, expect, it, vi } from "vitest";
import { perScrape } from "./per-scrape.js";

afterEach(() => {
  vi.useRealTimers();
});

it("shares one read among the collectors of a scrape, and reads again at the next", async () => {
  vi.useFakeTimers({ toFake: ["performance"] });
  let reads = 0;
  const read = perScrape(() => Promise.resolve(++reads));
  expect(await Promise.all([read(), read(), read()])).toEqual([1, 1, 1]);
  vi.advanceTimersByTime(5_000);
  expect(await read()).toBe(2);
});
