import { expect, it } from "vitest";
import { ResidencyRecordError } from "./records.js";
import { modelOfWant, wantSubject } from "./want.js";

it("names a model's want subject and reads the key back", () => {
  expect(wantSubject("all-minilm-l6-v2")).toBe("shoal.want.v1.all-minilm-l6-v2");
  expect(modelOfWant(wantSubject("all-minilm-l6-v2"))).toBe("all-minilm-l6-v2");
});

it("refuses keys that would be several subject tokens, and reads no key from other subjects", () => {
  for (const bad of ["", "a.b", "a*", ">"]) {
    expect(() => wantSubject(bad)).toThrow(ResidencyRecordError);
  }
  for (const subject of ["shoal.want.v1.", "shoal.want.v1.a.b", "shoal.control.v1.w1", "x"]) {
    expect(modelOfWant(subject)).toBeUndefined();
  }
});
