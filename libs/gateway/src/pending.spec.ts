import { create } from "@bufbuild/protobuf";
import { ErrorCode, WorkResultSchema, type WorkResult } from "@shoal/proto";
import { describe, expect, it } from "vitest";
import { DeadlineExceededError, InvalidArgumentError } from "./errors.js";
import { PendingRequests } from "./pending.js";

function answer(requestId: string, part: number, value = part): WorkResult {
  return create(WorkResultSchema, {
    requestId,
    part,
    outcome: {
      case: "embed",
      value: { dim: 1, embeddings: new Uint8Array([value]), tokens: [value], truncated: [false] },
    },
  });
}
const noError = () => undefined;

describe("PendingRequests", () => {
  it("assembles parts in part order, whatever order they arrive in", async () => {
    const pending = new PendingRequests();
    const held = pending.hold("r", 1000, () => new DeadlineExceededError("late"));
    held.expect(3);
    expect(pending.settle(answer("r", 2), noError)).toBe(true);
    expect(pending.settle(answer("r", 0), noError)).toBe(true);
    expect(pending.settle(answer("r", 1), noError)).toBe(true);
    const done = await held.answer;
    expect(done.outcomes.map((o) => o.value.tokens[0])).toEqual([0, 1, 2]);
    expect(pending.size).toBe(0);
  });

  it("accepts answers that arrive before the part count is known", async () => {
    const pending = new PendingRequests();
    const held = pending.hold("r", 1000, () => new DeadlineExceededError("late"));
    pending.settle(answer("r", 0), noError);
    held.expect(1);
    await expect(held.answer).resolves.toBeDefined();
  });

  it("answers exactly once: duplicates and strays are counted and dropped", async () => {
    const pending = new PendingRequests();
    const held = pending.hold("r", 1000, () => new DeadlineExceededError("late"));
    held.expect(2);
    pending.settle(answer("r", 0, 7), noError);
    expect(pending.settle(answer("r", 0, 9), noError)).toBe(false);
    expect(pending.settle(answer("r", 5), noError)).toBe(false);
    expect(pending.settle(answer("other", 0), noError)).toBe(false);
    pending.settle(answer("r", 1), noError);
    const done = await held.answer;
    expect(done.outcomes[0]?.value.tokens[0]).toBe(7);
    expect(pending.settle(answer("r", 1), noError)).toBe(false);
    expect(pending.duplicates).toBe(4);
  });

  it("fails the whole request on a part's error", async () => {
    const pending = new PendingRequests();
    const held = pending.hold("r", 1000, () => new DeadlineExceededError("late"));
    held.expect(2);
    const failed = create(WorkResultSchema, {
      requestId: "r",
      part: 1,
      outcome: { case: "error", value: { code: ErrorCode.INVALID_ARGUMENT, message: "bad" } },
    });
    pending.settle(failed, () => new InvalidArgumentError("bad"));
    await expect(held.answer).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(pending.size).toBe(0);
  });

  it("does not leave a rejection unhandled when the deadline passes before anyone awaits", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on("unhandledRejection", onUnhandled);
    try {
      const pending = new PendingRequests();
      const held = pending.hold("r", 1, () => new DeadlineExceededError("late"));
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
      await expect(held.answer).rejects.toBeInstanceOf(DeadlineExceededError);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("times out with the caller's error and forgets the request", async () => {
    const pending = new PendingRequests();
    const held = pending.hold("r", 10, () => new DeadlineExceededError("late"));
    await expect(held.answer).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(pending.settle(answer("r", 0), noError)).toBe(false);
    expect(pending.size).toBe(0);
  });
});
