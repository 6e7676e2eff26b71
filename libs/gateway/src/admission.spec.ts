import { describe, expect, it } from "vitest";
import { DeadlineExceededError } from "./errors.js";
import { requestTimeoutMs } from "./admission.js";

describe("requestTimeoutMs", () => {
  it("takes the client's time, else the default, clamped to the most allowed", () => {
    expect(requestTimeoutMs(5000, {})).toBe(5000);
    expect(requestTimeoutMs(undefined, { defaultTimeoutMs: 1234 })).toBe(1234);
    expect(requestTimeoutMs(undefined, {})).toBe(30_000);
    expect(requestTimeoutMs(900_000, { maxTimeoutMs: 60_000 })).toBe(60_000);
  });

  it("rounds a finer-grained deadline (gRPC's µs and ns) down to whole milliseconds", () => {
    // grpc-go sends e.g. `grpc-timeout: 9999874u` for a 10 s context.
    expect(requestTimeoutMs(9999.874, {})).toBe(9999);
    expect(Number.isInteger(requestTimeoutMs(0.5 + 7, {}))).toBe(true);
  });

  it("refuses a deadline that has passed, or is under a millisecond", () => {
    expect(() => requestTimeoutMs(0, {})).toThrow(DeadlineExceededError);
    expect(() => requestTimeoutMs(-5, {})).toThrow(DeadlineExceededError);
    expect(() => requestTimeoutMs(0.5, {})).toThrow(DeadlineExceededError);
  });
});
