import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { file_shoal_inference_v1_inference, file_shoal_work_v1_work } from "@shoal/proto";
import { describe, expect, it } from "vitest";
import { DescriptorIndex } from "./descriptor-index.js";

const WORK = "shoal/work/v1/work.proto";
const INFERENCE = "shoal/inference/v1/inference.proto";

function names(serialized: Uint8Array[]): string[] {
  return serialized.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);
}

describe("DescriptorIndex", () => {
  // work.proto imports inference.proto: the one served file with an import to follow.
  const index = new DescriptorIndex([file_shoal_work_v1_work]);

  it("indexes imports as well as the files given", () => {
    expect(index.fileByName(WORK)).toBe(file_shoal_work_v1_work);
    expect(index.fileByName(INFERENCE)).toBe(file_shoal_inference_v1_inference);
    expect(index.fileByName("shoal/nope/v1/nope.proto")).toBeUndefined();
  });

  it.each([
    ["shoal.work.v1.WorkItem", WORK],
    ["shoal.inference.v1.InferenceService", INFERENCE],
    ["shoal.inference.v1.InferenceService.Embed", INFERENCE],
    ["shoal.inference.v1.EmbedRequest.inputs", INFERENCE],
    ["shoal.inference.v1.Priority", INFERENCE],
  ])("finds the file declaring %s", (symbol, file) => {
    expect(index.fileContainingSymbol(symbol)?.proto.name).toBe(file);
  });

  it("finds nothing for unknown symbols", () => {
    expect(index.fileContainingSymbol("shoal.inference.v1.Nope")).toBeUndefined();
    expect(index.fileContainingSymbol("shoal.inference.v1.InferenceService.Nope")).toBeUndefined();
  });

  it("sends a file with its imports, and imports only once per stream", () => {
    const sent = new Set<string>();
    expect(names(index.withDependencies(file_shoal_work_v1_work, sent))).toEqual([WORK, INFERENCE]);
    expect(names(index.withDependencies(file_shoal_work_v1_work, sent))).toEqual([WORK]);
    expect(names(index.withDependencies(file_shoal_inference_v1_inference, sent))).toEqual([
      INFERENCE,
    ]);
  });

  it("serializes the descriptors protobuf-es embeds", () => {
    const [bytes] = index.withDependencies(file_shoal_inference_v1_inference, new Set());
    const proto = fromBinary(FileDescriptorProtoSchema, bytes ?? new Uint8Array());
    expect(proto.package).toBe("shoal.inference.v1");
    expect(proto.service.map((s) => s.name)).toEqual(["InferenceService"]);
  });

  it("knows message types and that Shoal declares no extensions", () => {
    expect(index.message("shoal.work.v1.WorkItem")?.typeName).toBe("shoal.work.v1.WorkItem");
    expect(index.message("shoal.work.v1.Nope")).toBeUndefined();
    expect(index.extensionNumbers("shoal.work.v1.WorkItem")).toEqual([]);
    expect(index.fileContainingExtension("shoal.work.v1.WorkItem", 100)).toBeUndefined();
  });
});
