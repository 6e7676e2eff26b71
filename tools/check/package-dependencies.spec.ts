import { describe, expect, it } from "vitest";
import { importedPackages, isTestFile, mismatches } from "./package-dependencies.js";

describe("importedPackages", () => {
  it("names the packages of every import form, not builtins, relative paths or strings", () => {
    const source = [
      'import { a } from "@scope/pkg/sub/path";',
      'import type { B } from "plain";',
      "import {\n  c,\n  d,\n} from 'multi-line';",
      'export { e } from "re-exported";',
      'import "side-effect";',
      // Split, or the check itself would read this test's text as a dynamic import.
      "const f = await im" + 'port("dynamic");',
      'import { readFile } from "node:fs/promises";',
      'import { join } from "path";',
      'import { g } from "./local.js";',
      'check(`${where}.ramp.from`, "not-an-import");',
    ].join("\n");
    expect([...importedPackages(source)].sort()).toEqual([
      "@scope/pkg",
      "dynamic",
      "multi-line",
      "plain",
      "re-exported",
      "side-effect",
    ]);
  });

  it("tells test files from source", () => {
    expect(isTestFile("test/support.ts")).toBe(true);
    expect(isTestFile("src/plan.spec.ts")).toBe(true);
    expect(isTestFile("vitest.config.ts")).toBe(true);
    expect(isTestFile("src/plan.ts")).toBe(false);
  });
});

describe("mismatches", () => {
  const pkg = (
    files: Record<string, string>,
    dependencies: Record<string, string>,
    devDependencies: Record<string, string> = {},
  ) => ({
    dir: "libs/x",
    name: "@shoal/x",
    dependencies,
    devDependencies,
    files: new Map(Object.entries(files)),
  });
  const root = { pino: "9.14.0", vitest: "3.2.4" };
  const workspace = new Set(["@shoal/x", "@shoal/proto"]);

  it("accepts a package that declares exactly what it imports", () => {
    const p = pkg(
      { "src/a.ts": 'import "pino";\nimport "@shoal/proto";', "src/a.spec.ts": 'import "vitest";' },
      { pino: "9.14.0", "@shoal/proto": "*" },
      { vitest: "3.2.4" },
    );
    expect(mismatches(p, root, workspace)).toEqual([]);
  });

  it("names an undeclared import, a test-only runtime dependency, an unused one and a stray version", () => {
    const p = pkg(
      {
        "src/a.ts": 'import "pino";',
        "test/a.test.ts": 'import "vitest";\nimport "@shoal/proto";',
      },
      { "@shoal/proto": "*", unused: "1.0.0" },
      { vitest: "3.0.0" },
    );
    expect(mismatches(p, root, workspace)).toEqual([
      "@shoal/x: pino is imported but not in dependencies",
      "@shoal/x: @shoal/proto is only used by tests: move it to devDependencies",
      "@shoal/x: unused is in dependencies but nothing imports it",
      "@shoal/x: vitest is 3.0.0 in devDependencies; the root installs 3.2.4",
    ]);
  });
});
