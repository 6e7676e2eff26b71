import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BatchBudget } from "./budget.js";
import type { BatchCandidate } from "./candidate.js";
import { formBatch } from "./form-batch.js";
import { formBucketedBatch } from "./form-bucketed-batch.js";
import { compareCandidates } from "./order.js";
import { paddedTokens } from "./padded-tokens.js";

interface Item extends BatchCandidate {
  readonly id: string;
}

const NOW = 1_700_000_000_000;
let arrival = 0;

function item(id: string, maxInputTokens: number, fields: Partial<BatchCandidate> = {}): Item {
  const inputs = fields.inputs ?? 1;
  return {
    id,
    inputs,
    maxInputTokens,
    totalTokens: fields.totalTokens ?? inputs * maxInputTokens,
    priority: fields.priority ?? 0,
    deadlineUnixMs: fields.deadlineUnixMs ?? 0,
    arrival: fields.arrival ?? arrival++,
  };
}

const ids = (items: readonly Item[]): string[] => items.map((i) => i.id);
const real = (items: readonly BatchCandidate[]): number =>
  items.reduce((n, c) => n + c.totalTokens, 0);

describe("formBucketedBatch", () => {
  it("leaves a long item out when short ones fill the budget with more real work", () => {
    // Greedy in arrival order: s1 + l2 = 2 rows × 200 = 400 padded for 210 real tokens, then
    // nothing else fits. Bucket ≤ 16: all 25 short rows, 250 padded, 250 real.
    const budget: BatchBudget = { maxPaddedTokens: 400, maxInputs: 100 };
    const items = [
      item("s1", 10),
      item("l2", 200),
      ...Array.from({ length: 24 }, (_, i) => item(`s${i + 3}`, 10)),
    ];
    const greedy = formBatch(items, budget, NOW);
    expect(ids(greedy.batch)).toEqual(["s1", "l2"]);
    const bucketed = formBucketedBatch(items, budget, NOW);
    expect(bucketed.batch.every((c) => c.maxInputTokens <= 16)).toBe(true);
    expect(bucketed.batch).toHaveLength(25);
    expect(ids(bucketed.putBack)).toEqual(["l2"]);
    expect(real(bucketed.batch)).toBeGreaterThan(real(greedy.batch));
  });

  it("keeps the most urgent item even when it is the long one", () => {
    const budget: BatchBudget = { maxPaddedTokens: 400, maxInputs: 100 };
    const items = [item("l1", 200), item("s2", 10), item("s3", 10), item("s4", 10)];
    const { batch, putBack } = formBucketedBatch(items, budget, NOW);
    expect(batch[0]?.id).toBe("l1");
    expect(ids(batch)).toEqual(["l1", "s2"]);
    expect(ids(putBack)).toEqual(["s3", "s4"]);
  });

  it("is formBatch when every item is in one bucket, or everything fits", () => {
    const budget: BatchBudget = { maxPaddedTokens: 100, maxInputs: 100 };
    const same = [item("a", 20), item("b", 30), item("c", 25), item("d", 31), item("e", 17)];
    expect(ids(formBucketedBatch(same, budget, NOW).batch)).toEqual(
      ids(formBatch(same, budget, NOW).batch),
    );
    const roomy = [item("x", 10), item("y", 300)];
    expect(
      ids(formBucketedBatch(roomy, { maxPaddedTokens: 10_000, maxInputs: 10 }, NOW).batch),
    ).toEqual(["x", "y"]);
  });

  it("answers expired work apart and never batches it", () => {
    const items = [item("gone", 10, { deadlineUnixMs: NOW - 1 }), item("l", 200), item("s", 10)];
    const { batch, expired } = formBucketedBatch(
      items,
      { maxPaddedTokens: 250, maxInputs: 10 },
      NOW,
    );
    expect(ids(expired)).toEqual(["gone"]);
    expect(ids(batch)).toEqual(["l"]);
  });

  it("uses the edges it is given", () => {
    const budget: BatchBudget = { maxPaddedTokens: 100, maxInputs: 100 };
    const items = [item("a", 5), item("b", 40), item("c", 5), item("d", 5), item("e", 5)];
    // a + b: 2 × 40 = 80 padded, 45 real; ≤ 16: a, c, d, e, 20 real. Real tokens decide: a + b.
    expect(ids(formBucketedBatch(items, budget, NOW, [16]).batch)).toEqual(["a", "b"]);
    const many = [
      item("p", 5),
      item("q", 40),
      ...Array.from({ length: 12 }, (_, i) => item(`r${i}`, 5)),
    ];
    // p + q: 2 × 40 = 80 padded, 45 real; ≤ 16: 13 rows × 5 = 65 padded, 65 real.
    expect(formBucketedBatch(many, budget, NOW, [16]).batch).toHaveLength(13);
    // Without an edge between 5 and 40 there is no choice to make.
    expect(ids(formBucketedBatch(many, budget, NOW, []).batch)).toEqual(["p", "q"]);
  });
});

const budgetArb = fc.record({
  maxPaddedTokens: fc.integer({ min: 1, max: 4096 }),
  maxInputs: fc.integer({ min: 1, max: 64 }),
});

const candidatesArb = fc
  .array(
    fc.record({
      inputs: fc.integer({ min: 1, max: 8 }),
      maxInputTokens: fc.integer({ min: 1, max: 512 }),
      fill: fc.double({ min: 0.1, max: 1, noNaN: true }),
      priority: fc.integer({ min: 0, max: 2 }),
      deadlineUnixMs: fc.oneof(fc.constant(0), fc.integer({ min: NOW - 1000, max: NOW + 1000 })),
    }),
    { maxLength: 50 },
  )
  .map((rows) =>
    rows.map(
      ({ fill, ...row }, index): Item => ({
        id: `c${index}`,
        ...row,
        totalTokens: Math.max(row.inputs, Math.round(row.inputs * row.maxInputTokens * fill)),
        arrival: index,
      }),
    ),
  );

describe("formBucketedBatch properties", () => {
  it("partitions, stays in budget, keeps the head, and never computes less than formBatch", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        const plain = formBatch(candidates, budget, NOW);
        const { batch, putBack, expired } = formBucketedBatch(candidates, budget, NOW);
        const out = [...batch, ...putBack, ...expired];
        expect(out).toHaveLength(candidates.length);
        expect(new Set(out)).toEqual(new Set(candidates));
        expect(new Set(expired)).toEqual(new Set(plain.expired));
        const inputs = batch.reduce((n, c) => n + c.inputs, 0);
        if (inputs > budget.maxInputs || paddedTokens(batch) > budget.maxPaddedTokens) {
          expect(batch).toHaveLength(1);
        }
        expect(batch[0]).toBe(plain.batch[0]);
        expect(real(batch)).toBeGreaterThanOrEqual(real(plain.batch));
        expect([...putBack].sort(compareCandidates)).toEqual(putBack);
      }),
    );
  });

  it("drains a fixed set of work: nothing starves", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        let queue: readonly Item[] = candidates;
        let rounds = 0;
        while (queue.length > 0) {
          const { putBack } = formBucketedBatch(queue, budget, NOW);
          expect(putBack.length).toBeLessThan(queue.length);
          queue = putBack;
          rounds++;
        }
        expect(rounds).toBeLessThanOrEqual(candidates.length);
      }),
    );
  });
});
