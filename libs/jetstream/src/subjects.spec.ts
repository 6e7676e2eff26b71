import { describe, expect, it } from "vitest";
import { modelWorkFilter, replySubject, workSubject } from "./subjects.js";

describe("subjects", () => {
  it("lays work out by model and bucket", () => {
    expect(workSubject("all-minilm-l6-v2", 64)).toBe("shoal.work.v1.all-minilm-l6-v2.b64");
    expect(modelWorkFilter("all-minilm-l6-v2")).toBe("shoal.work.v1.all-minilm-l6-v2.>");
    expect(replySubject("abc123")).toBe("shoal.reply.v1.abc123");
  });
  it.each(["a.b", "a b", "*", ">", ""])("refuses %j as a subject token", (token) => {
    expect(() => workSubject(token, 1)).toThrow(/not a valid NATS subject token/);
  });
});
