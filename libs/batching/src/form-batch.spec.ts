import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BatchBudget } from "./budget.js";
import type { BatchCandidate } from "./candidate.js";
import { formBatch } from "./form-batch.js";
import { compareCandidates } from "./order.js";
import { paddedTokens } from "./padded-tokens.js";

interface Item extends BatchCandidate {
  readonly id: string;
}

const NOW = 1_700_000_000_000;

function item(id: string, fields: Partial<Omit<Item, "id">> = {}): Item {
  const inputs = fields.inputs ?? 1;
  const maxInputTokens = fields.maxInputTokens ?? 10;
  return {
    id,
    inputs,
    maxInputTokens,
    totalTokens: fields.totalTokens ?? inputs * maxInputTokens,
    priority: fields.priority ?? 0,
    deadlineUnixMs: fields.deadlineUnixMs ?? 0,
    arrival: fields.arrival ?? Number(id.replace(/\D/g, "")),
  };
}

function ids(items: readonly Item[]): string[] {
  return items.map((i) => i.id);
}

const roomy: BatchBudget = { maxPaddedTokens: 10_000, maxInputs: 100 };

describe("formBatch", () => {
  it.each([
    {
      name: "empty input",
      candidates: [],
      budget: roomy,
      batch: [],
      putBack: [],
      expired: [],
    },
    {
      name: "everything fits, ordered by arrival",
      candidates: [item("a3"), item("a1"), item("a2")],
      budget: roomy,
      batch: ["a1", "a2", "a3"],
      putBack: [],
      expired: [],
    },
    {
      name: "priority beats arrival",
      candidates: [item("a1"), item("a2", { priority: 5 }), item("a3", { priority: 1 })],
      budget: roomy,
      batch: ["a2", "a3", "a1"],
      putBack: [],
      expired: [],
    },
    {
      name: "deadline beats arrival, no deadline last",
      candidates: [
        item("a1"),
        item("a2", { deadlineUnixMs: NOW + 500 }),
        item("a3", { deadlineUnixMs: NOW + 100 }),
      ],
      budget: roomy,
      batch: ["a3", "a2", "a1"],
      putBack: [],
      expired: [],
    },
    {
      name: "deadline at now or before is expired, zero is no deadline",
      candidates: [
        item("a1", { deadlineUnixMs: NOW }),
        item("a2", { deadlineUnixMs: NOW - 1 }),
        item("a3", { deadlineUnixMs: 0 }),
        item("a4", { deadlineUnixMs: NOW + 1 }),
      ],
      budget: roomy,
      batch: ["a4", "a3"],
      putBack: [],
      expired: ["a1", "a2"],
    },
    {
      name: "expired work is dropped even when it would be first in order",
      candidates: [item("a1", { priority: 9, deadlineUnixMs: NOW - 10 }), item("a2")],
      budget: roomy,
      batch: ["a2"],
      putBack: [],
      expired: ["a1"],
    },
    {
      name: "input cap puts the tail back",
      candidates: [item("a1", { inputs: 2 }), item("a2", { inputs: 2 }), item("a3", { inputs: 2 })],
      budget: { maxPaddedTokens: 10_000, maxInputs: 4 },
      batch: ["a1", "a2"],
      putBack: ["a3"],
      expired: [],
    },
    {
      name: "padding counts: a long item inflates every row",
      // a1+a2 = 2 rows × 10; adding a3 makes 3 rows × 50 = 150 > 100.
      candidates: [item("a1"), item("a2"), item("a3", { maxInputTokens: 50 })],
      budget: { maxPaddedTokens: 100, maxInputs: 100 },
      batch: ["a1", "a2"],
      putBack: ["a3"],
      expired: [],
    },
    {
      name: "a misfit does not block smaller items behind it",
      candidates: [
        item("a1", { maxInputTokens: 40 }),
        item("a2", { maxInputTokens: 80 }),
        item("a3", { maxInputTokens: 30 }),
        item("a4", { maxInputTokens: 20 }),
      ],
      // a1 alone 40; +a2 → 2×80 = 160 > 100; +a3 → 2×40 = 80; +a4 → 3×40 = 120 > 100.
      budget: { maxPaddedTokens: 100, maxInputs: 100 },
      batch: ["a1", "a3"],
      putBack: ["a2", "a4"],
      expired: [],
    },
    {
      name: "exact fit is allowed",
      candidates: [
        item("a1", { inputs: 2, maxInputTokens: 25 }),
        item("a2", { inputs: 2, maxInputTokens: 25 }),
      ],
      budget: { maxPaddedTokens: 100, maxInputs: 4 },
      batch: ["a1", "a2"],
      putBack: [],
      expired: [],
    },
    {
      name: "oversized item first in order runs alone",
      candidates: [item("a1", { maxInputTokens: 1000 }), item("a2", { maxInputTokens: 1 })],
      budget: { maxPaddedTokens: 100, maxInputs: 100 },
      batch: ["a1"],
      putBack: ["a2"],
      expired: [],
    },
    {
      name: "oversized by inputs runs alone",
      candidates: [item("a1", { inputs: 7 }), item("a2")],
      budget: { maxPaddedTokens: 10_000, maxInputs: 4 },
      batch: ["a1"],
      putBack: ["a2"],
      expired: [],
    },
    {
      name: "oversized item behind a non-empty batch waits",
      candidates: [item("a1"), item("a2", { maxInputTokens: 1000 }), item("a3")],
      budget: { maxPaddedTokens: 100, maxInputs: 100 },
      batch: ["a1", "a3"],
      putBack: ["a2"],
      expired: [],
    },
  ])("$name", ({ candidates, budget, batch, putBack, expired }) => {
    const result = formBatch(candidates, budget, NOW);
    expect(ids(result.batch)).toEqual(batch);
    expect(ids(result.putBack)).toEqual(putBack);
    expect(ids(result.expired)).toEqual(expired);
  });

  it("does not mutate its input", () => {
    const candidates = [item("a2"), item("a1")];
    const copy = [...candidates];
    formBatch(candidates, roomy, NOW);
    expect(candidates).toEqual(copy);
  });

  it("a starving big item is first next round and runs once the items ahead of it are gone", () => {
    const budget: BatchBudget = { maxPaddedTokens: 100, maxInputs: 100 };
    const small = item("a0", { maxInputTokens: 40 });
    const big = item("a1", { inputs: 2, maxInputTokens: 40 });
    // a0 alone 40; +a1 → 3×40 = 120 > 100; +a2 → 2×40 = 80.
    const first = formBatch([big, small, item("a2", { maxInputTokens: 10 })], budget, NOW);
    expect(ids(first.batch)).toEqual(["a0", "a2"]);
    expect(ids(first.putBack)).toEqual(["a1"]);
    // Newer small work keeps arriving, but the big item now leads the order and is not overtaken.
    const second = formBatch([item("a3", { maxInputTokens: 10 }), ...first.putBack], budget, NOW);
    expect(ids(second.batch)).toEqual(["a1"]);
    expect(ids(second.putBack)).toEqual(["a3"]);
  });
});

const budgetArb = fc.record({
  maxPaddedTokens: fc.integer({ min: 1, max: 8192 }),
  maxInputs: fc.integer({ min: 1, max: 128 }),
});

const candidatesArb = fc
  .array(
    fc.record({
      inputs: fc.integer({ min: 1, max: 64 }),
      maxInputTokens: fc.integer({ min: 1, max: 512 }),
      priority: fc.integer({ min: 0, max: 3 }),
      deadlineUnixMs: fc.oneof(fc.constant(0), fc.integer({ min: NOW - 1000, max: NOW + 1000 })),
    }),
    { maxLength: 60 },
  )
  .map((rows) =>
    rows.map(
      (row, index): Item => ({
        id: `c${index}`,
        ...row,
        totalTokens: row.inputs * row.maxInputTokens,
        arrival: index,
      }),
    ),
  );

function withinBudget(batch: readonly BatchCandidate[], budget: BatchBudget): boolean {
  const inputs = batch.reduce((sum, c) => sum + c.inputs, 0);
  return inputs <= budget.maxInputs && paddedTokens(batch) <= budget.maxPaddedTokens;
}

function isSorted(items: readonly BatchCandidate[]): boolean {
  return items.every(
    (c, i) => i === 0 || compareCandidates(items[i - 1] as BatchCandidate, c) <= 0,
  );
}

describe("formBatch properties", () => {
  it("puts every candidate in exactly one output", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        const { batch, putBack, expired } = formBatch(candidates, budget, NOW);
        const out = [...batch, ...putBack, ...expired];
        expect(out).toHaveLength(candidates.length);
        expect(new Set(out)).toEqual(new Set(candidates));
      }),
    );
  });

  it("keeps the batch within budget unless it is a single oversized item", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        const { batch } = formBatch(candidates, budget, NOW);
        if (!withinBudget(batch, budget)) {
          expect(batch).toHaveLength(1);
        }
      }),
    );
  });

  it("never batches expired work and expires only work past its deadline", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        const { batch, putBack, expired } = formBatch(candidates, budget, NOW);
        for (const c of expired)
          expect(c.deadlineUnixMs !== 0 && c.deadlineUnixMs <= NOW).toBe(true);
        for (const c of [...batch, ...putBack])
          expect(c.deadlineUnixMs === 0 || c.deadlineUnixMs > NOW).toBe(true);
      }),
    );
  });

  it("returns batch and put-back in scheduling order, led by the first live candidate", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        const { batch, putBack } = formBatch(candidates, budget, NOW);
        expect(isSorted(batch)).toBe(true);
        expect(isSorted(putBack)).toBe(true);
        const live = [...batch, ...putBack].sort(compareCandidates);
        expect(batch[0]).toBe(live[0]);
      }),
    );
  });

  it("leaves no room for any put-back item", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        const { batch, putBack } = formBatch(candidates, budget, NOW);
        for (const c of putBack) expect(withinBudget([...batch, c], budget)).toBe(false);
      }),
    );
  });

  it("is deterministic and independent of input order", () => {
    fc.assert(
      fc.property(
        candidatesArb.chain((candidates) =>
          fc.tuple(
            fc.constant(candidates),
            fc.shuffledSubarray(candidates, { minLength: candidates.length }),
          ),
        ),
        budgetArb,
        ([candidates, shuffled], budget) => {
          const a = formBatch(candidates, budget, NOW);
          const b = formBatch(candidates, budget, NOW);
          const c = formBatch(shuffled, budget, NOW);
          expect(ids(b.batch)).toEqual(ids(a.batch));
          expect(ids(b.putBack)).toEqual(ids(a.putBack));
          expect(ids(b.expired)).toEqual(ids(a.expired));
          expect(ids(c.batch)).toEqual(ids(a.batch));
          expect(ids(c.putBack)).toEqual(ids(a.putBack));
          expect(new Set(c.expired)).toEqual(new Set(a.expired));
        },
      ),
    );
  });

  it("drains a fixed set of work within as many rounds as items: nothing starves", () => {
    fc.assert(
      fc.property(candidatesArb, budgetArb, (candidates, budget) => {
        let queue: readonly Item[] = candidates;
        let rounds = 0;
        while (queue.length > 0) {
          const { putBack } = formBatch(queue, budget, NOW);
          expect(putBack.length).toBeLessThan(queue.length);
          queue = putBack;
          rounds += 1;
        }
        expect(rounds).toBeLessThanOrEqual(candidates.length);
      }),
    );
  });
});
