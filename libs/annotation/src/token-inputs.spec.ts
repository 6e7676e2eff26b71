import { create } from "@bufbuild/protobuf";
import { TokenIdsSchema } from "@shoal/proto";
import { describe, expect, it } from "vitest";
import { tokenInputsError } from "./token-inputs.js";

const ids = (...list: number[]) => create(TokenIdsSchema, { ids: list });

describe("tokenInputsError", () => {
  it("passes ids inside the vocabulary", () => {
    expect(tokenInputsError([ids(0, 1), ids(3)], 4, "m")).toBeUndefined();
  });
  it("names the input and position of an id outside the vocabulary", () => {
    expect(tokenInputsError([ids(0), ids(1, 4)], 4, "m")).toBe(
      'input 1: token id 4 at 1 is outside the vocabulary of model "m" (4 ids)',
    );
  });
  it("refuses ids when the model's vocabulary is not on this machine", () => {
    expect(tokenInputsError([ids(0)], undefined, "m")).toMatch(/no vocabulary here/);
  });
});
