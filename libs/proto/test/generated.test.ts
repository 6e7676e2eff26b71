import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fromBinary, toJson, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import * as proto from "../src/index.js";

// `src/gen` is generated and not committed; `nx test` regenerates it first, but a test run
// straight after editing proto/ does not. Comparing descriptors also catches an export lost
// from `index.ts` and a generator that drops or mangles a declaration.
const root = join(import.meta.dirname, "..", "..", "..");

/** proto/ as buf compiles it, without comments: what the generated files embed. */
function compiled(): DescFile["proto"][] {
  const image = execFileSync(
    join(root, "node_modules", ".bin", "buf"),
    ["build", "proto", "--as-file-descriptor-set", "--exclude-source-info", "-o", "-"],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  );
  return fromBinary(FileDescriptorSetSchema, image).file;
}

/** Every file descriptor `@shoal/proto` exports, namespaces included, by proto file name. */
function exported(): Map<string, DescFile> {
  const files = new Map<string, DescFile>();
  const visit = (scope: object): void => {
    for (const value of Object.values(scope)) {
      if (typeof value !== "object" || value === null) continue;
      if ((value as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === "Module") {
        visit(value as object);
      } else if ((value as { kind?: unknown }).kind === "file") {
        const file = value as DescFile;
        files.set(file.proto.name, file);
      }
    }
  };
  visit(proto);
  return files;
}

const files = compiled();
const generated = exported();

describe("@shoal/proto", () => {
  it("exports a generated file for every file in proto/, and nothing else", () => {
    expect([...generated.keys()].sort()).toEqual(files.map((f) => f.name).sort());
  });

  it.each(files.map((f) => [f.name, f] as const))(
    "has %s as proto/ declares it now (else run `nx run proto:generate`)",
    (name, file) => {
      const embedded = generated.get(name);
      expect(embedded, `${name} is not exported`).toBeDefined();
      // As JSON, so that a failure shows which declaration differs.
      expect(toJson(FileDescriptorProtoSchema, (embedded as DescFile).proto)).toEqual(
        toJson(FileDescriptorProtoSchema, file),
      );
    },
  );
});
