import { describe, expect, it } from "vitest";
import {
  modelWorkFilter,
  parseWorkSubject,
  replySubject,
  retrySubject,
  routedSubject,
  routedWorkFilter,
  workSubject,
} from "./subjects.js";

describe("subjects", () => {
  it("lays work out by model and bucket", () => {
    expect(workSubject("all-minilm-l6-v2", 64)).toBe("shoal.work.v1.all-minilm-l6-v2.b64");
    expect(modelWorkFilter("all-minilm-l6-v2")).toBe("shoal.work.v1.all-minilm-l6-v2.>");
    expect(replySubject("abc123")).toBe("shoal.reply.v1.abc123");
  });
  it.each(["a.b", "a b", "*", ">", ""])("refuses %j as a subject token", (token) => {
    expect(() => workSubject(token, 1)).toThrow(/not a valid NATS subject token/);
    expect(() => routedSubject(token, "m", 1)).toThrow(/not a valid NATS subject token/);
  });
  it("lays routed work out by worker, model and bucket", () => {
    expect(routedSubject("w1", "m", 32)).toBe("shoal.routed.v1.w1.m.b32");
    expect(routedWorkFilter("w1", "m")).toBe("shoal.routed.v1.w1.m.>");
  });
  it("reads a work subject back, and nothing else", () => {
    expect(parseWorkSubject(workSubject("all-minilm-l6-v2", 64))).toEqual({
      modelKey: "all-minilm-l6-v2",
      bucket: 64,
    });
    for (const s of ["shoal.work.v1.m", "shoal.work.v1.m.b", "shoal.routed.v1.w.m.b1", "x"]) {
      expect(parseWorkSubject(s)).toBeUndefined();
    }
  });

  it("puts a retried item under its work subject's retry, once, still under the model's filter", () => {
    const retry = retrySubject(workSubject("m", 16));
    expect(retry).toBe("shoal.work.v1.m.b16.retry");
    expect(retrySubject(retry)).toBe(retry);
    expect(parseWorkSubject(retry)).toEqual({ modelKey: "m", bucket: 16 });
    expect(modelWorkFilter("m")).toBe("shoal.work.v1.m.>");
  });
});
