import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EmbeddingSchema } from "@shoal/proto";
import { describe, expect, it } from "vitest";
import { answersInBinary, packedFloats } from "./packed-floats.js";

const bytesOf = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

describe("packedFloats", () => {
  it.each([0, 1, 3, 384, 40_000])("encodes %i values as protobuf-es encodes them", (n) => {
    const values = Array.from(new Float32Array(Array.from({ length: n }, (_, i) => i / 7 - 3)));
    const embedding = create(EmbeddingSchema, { tokens: 5, truncated: true });
    embedding.$unknown = [packedFloats(1, bytesOf(values))];
    const raw = toBinary(EmbeddingSchema, embedding);
    const decoded = fromBinary(EmbeddingSchema, raw);
    expect(decoded.values).toEqual(values);
    expect(decoded.tokens).toBe(5);
    expect(decoded.truncated).toBe(true);
    expect(decoded.$unknown ?? []).toEqual([]);
  });
});

describe("answersInBinary", () => {
  it.each([
    ["application/grpc", true],
    ["application/grpc+proto", true],
    ["application/grpc-web+proto", true],
    ["application/proto", true],
    ["application/json", false],
    ["application/grpc+json", false],
    ["application/connect+json; charset=utf-8", false],
    [null, false],
  ])("%s → %s", (contentType, binary) => {
    expect(answersInBinary(contentType)).toBe(binary);
  });
});
