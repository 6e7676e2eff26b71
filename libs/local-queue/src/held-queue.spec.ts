import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HeldQueue } from "./held-queue.js";

const limits = { maxItems: 4, maxBytes: 100, holdMs: 50 };
const items = (...names: string[]) => names.map((value) => ({ value, bytes: 10 }));

describe("HeldQueue", () => {
  it("accepts a prefix within the item bound; the rest stays with the putter", () => {
    const q = new HeldQueue<string>(limits);
    expect(q.put("m", items("a", "b", "c"), 0)).toBe(3);
    expect(q.put("n", items("d", "e"), 0)).toBe(1);
    expect(q.size).toBe(4);
    expect(q.bytes).toBe(40);
  });

  it("accepts a prefix within the byte bound, even when a later item would fit", () => {
    const q = new HeldQueue<string>(limits);
    const n = q.put(
      "m",
      [
        { value: "a", bytes: 60 },
        { value: "big", bytes: 50 },
        { value: "small", bytes: 1 },
      ],
      0,
    );
    // Order matters to the putter (it NAKs exactly the tail), so nothing skips ahead.
    expect(n).toBe(1);
    expect(q.bytes).toBe(60);
  });

  it("hands out a model's items oldest first, never another model's", () => {
    const q = new HeldQueue<string>(limits);
    q.put("m", items("a", "b"), 0);
    q.put("n", items("x"), 1);
    q.put("m", items("c"), 2);
    expect(q.take("m", 2)).toEqual(["a", "b"]);
    expect(q.take("other", 5)).toEqual([]);
    expect(q.take("m", 5)).toEqual(["c"]);
    expect(q.take("m", 5)).toEqual([]);
    expect(q.size).toBe(1);
    expect(q.bytes).toBe(10);
  });

  it("expires exactly the items held for holdMs or longer", () => {
    const q = new HeldQueue<string>(limits);
    q.put("m", items("a"), 0);
    q.put("m", items("b"), 30);
    q.put("n", items("c"), 10);
    expect(q.nextExpiryMs()).toBe(50);
    expect(q.expire(49)).toEqual([]);
    expect(q.expire(60)).toEqual(["a", "c"]);
    expect(q.nextExpiryMs()).toBe(80);
    expect(q.expire(80)).toEqual(["b"]);
    expect(q.nextExpiryMs()).toBeUndefined();
    expect(q.size).toBe(0);
  });

  it("frees room as items leave", () => {
    const q = new HeldQueue<string>(limits);
    expect(q.put("m", items("a", "b", "c", "d"), 0)).toBe(4);
    expect(q.put("m", items("e"), 0)).toBe(0);
    q.take("m", 1);
    expect(q.put("m", items("e"), 0)).toBe(1);
    expect([...q.values()]).toEqual(["b", "c", "d", "e"]);
    expect(q.drain()).toEqual(["b", "c", "d", "e"]);
    expect(q.size).toBe(0);
    expect(q.bytes).toBe(0);
  });

  it("loses and duplicates nothing under any sequence of operations", () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("put" as const),
        model: fc.constantFrom("m", "n"),
        count: fc.integer({ min: 1, max: 5 }),
        bytes: fc.integer({ min: 0, max: 40 }),
      }),
      fc.record({
        kind: fc.constant("take" as const),
        model: fc.constantFrom("m", "n"),
        max: fc.integer({ min: 1, max: 5 }),
      }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 60 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const q = new HeldQueue<number>(limits);
        let now = 0;
        let next = 0;
        const out: number[] = [];
        const refused: number[] = [];
        for (const o of ops) {
          if (o.kind === "put") {
            const batch = Array.from({ length: o.count }, () => ({
              value: next++,
              bytes: o.bytes,
            }));
            const n = q.put(o.model, batch, now);
            refused.push(...batch.slice(n).map((b) => b.value));
          } else if (o.kind === "take") {
            const got = q.take(o.model, o.max);
            expect(got.length).toBeLessThanOrEqual(o.max);
            out.push(...got);
          } else {
            now += o.ms;
            out.push(...q.expire(now));
          }
          expect(q.size).toBeLessThanOrEqual(limits.maxItems);
          expect(q.bytes).toBeLessThanOrEqual(limits.maxBytes);
        }
        out.push(...q.drain());
        const all = [...out, ...refused].sort((a, b) => a - b);
        expect(all).toEqual(Array.from({ length: next }, (_, i) => i));
      }),
    );
  });
});
