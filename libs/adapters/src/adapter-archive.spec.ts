import { Readable } from "node:stream";
import { tarArchive } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { readAdapterArchive } from "./adapter-archive.js";
import { InvalidAdapterError } from "./peft.js";

const read = (entries: Parameters<typeof tarArchive>[0]) =>
  readAdapterArchive(Readable.from([tarArchive(entries)]));

describe("readAdapterArchive", () => {
  it("picks the two adapter files, dropping the rest", async () => {
    const files = await read([
      { name: "bot/README.md", data: "# bot" },
      { name: "bot/adapter_config.json", data: "{}" },
      { name: "bot/adapter_model.safetensors", data: "weights" },
    ]);
    expect(Buffer.from(files.config).toString()).toBe("{}");
    expect(Buffer.from(files.weights).toString()).toBe("weights");
  });

  it.each<[Parameters<typeof tarArchive>[0], string]>([
    [
      [],
      "the archive has no adapter_config.json and no adapter_model.safetensors at its top level (it holds no files)",
    ],
    [
      [
        { name: "adapter_config.json", data: "{}" },
        { name: "adapter_model.bin", data: "pickle" },
      ],
      "the archive has no adapter_model.safetensors at its top level (it holds adapter_config.json, adapter_model.bin); pickled adapter_model.bin is not accepted: save with safe_serialization=True",
    ],
    [
      [
        { name: "a/adapter_config.json", data: "{}" },
        { name: "b/adapter_model.safetensors", data: "w" },
      ],
      "the archive has no adapter_config.json and no adapter_model.safetensors at its top level (it holds a/adapter_config.json, b/adapter_model.safetensors)",
    ],
    [
      Array.from({ length: 10 }, (_, i) => ({ name: `f${i}`, data: "" })),
      "(it holds f0, f1, f2, f3, f4, f5, f6, f7, and 2 more)",
    ],
  ])("says what is missing and what the archive holds", async (entries, message) => {
    const error = await read(entries).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidAdapterError);
    expect((error as Error).message).toContain(message);
  });
});
