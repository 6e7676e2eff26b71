import { describe, expect, it } from "vitest";
import { compileSidecarClientOptions } from "./options.js";

describe("compileSidecarClientOptions", () => {
  it("fills defaults", () => {
    expect(compileSidecarClientOptions({ socketPath: "/tmp/s.sock" })).toEqual({
      socketPath: "/tmp/s.sock",
      requestTimeoutMs: 30_000,
      maxFrameBytes: 64 * 1024 * 1024,
    });
  });

  it("keeps given values", () => {
    expect(
      compileSidecarClientOptions({ socketPath: "s", requestTimeoutMs: 5, maxFrameBytes: 10 }),
    ).toEqual({
      socketPath: "s",
      requestTimeoutMs: 5,
      maxFrameBytes: 10,
    });
  });

  it.each([
    {
      options: { socketPath: "" },
      error: TypeError,
      message: "socketPath must be a non-empty string",
    },
    {
      options: { socketPath: "s", requestTimeoutMs: 0 },
      error: RangeError,
      message: "requestTimeoutMs must be an integer in 1..2147483647, got 0",
    },
    {
      options: { socketPath: "s", requestTimeoutMs: 2 ** 31 },
      error: RangeError,
      message: "requestTimeoutMs",
    },
    {
      options: { socketPath: "s", requestTimeoutMs: 1.5 },
      error: RangeError,
      message: "requestTimeoutMs",
    },
    {
      options: { socketPath: "s", maxFrameBytes: 0 },
      error: RangeError,
      message: "maxFrameBytes must be an integer in 1..4294967295, got 0",
    },
    {
      options: { socketPath: "s", maxFrameBytes: 2 ** 32 },
      error: RangeError,
      message: "maxFrameBytes",
    },
  ])("rejects $options", ({ options, error, message }) => {
    expect(() => compileSidecarClientOptions(options)).toThrow(error);
    expect(() => compileSidecarClientOptions(options)).toThrow(message);
  });
});
