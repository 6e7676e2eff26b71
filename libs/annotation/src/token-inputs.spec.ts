import { create } from "@bufbuild/protobuf";
import { TokenIdsSchema } from "@shoal/proto";
import { describe, expect, it } from "vitest";
import type { Tokenizer } from "./tokenizer.js";
import { decodeTokenInputs } from "./token-inputs.js";

// A four-word vocabulary: enough to check the bounds and the order of the decoded texts.
const words = ["a", "b", "c", "d"];
const counter: Tokenizer = {
  count: (text) => text.split(" ").length,
  decode: (ids) => ids.map((id) => words[id]).join(" "),
  vocabSize: words.length,
};
const ids = (...list: number[]) => create(TokenIdsSchema, { ids: list });

describe("decodeTokenInputs", () => {
  it("decodes every input in order", () => {
    expect(decodeTokenInputs([ids(0, 1), ids(3)], counter, "m")).toEqual({ texts: ["a b", "d"] });
  });
  it("names the input and position of an id outside the vocabulary", () => {
    expect(decodeTokenInputs([ids(0), ids(1, 4)], counter, "m")).toEqual({
      error: 'input 1: token id 4 at 1 is outside the vocabulary of model "m" (4 ids)',
    });
  });
  it("refuses ids when the model's tokenizer is not on this machine", () => {
    const result = decodeTokenInputs([ids(0)], undefined, "m");
    expect(result).toEqual({ error: expect.stringMatching(/no tokenizer/) as unknown });
  });
});
