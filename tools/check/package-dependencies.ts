/**
 * Checks that every workspace package declares what it imports: each package a source file
 * imports is in its `dependencies`, each package only its tests import (`*.spec.ts`,
 * `test/`, `vitest.config.ts`) in `dependencies` or `devDependencies`; nothing is declared that
 * nothing imports, nothing only tests use sits in `dependencies`, and every npm version is the
 * one the root `package.json` installs. The workspace hoists everything to the root, so an
 * undeclared import works here and breaks the day a package is built or deployed on its own.
 *
 *   node --import tsx tools/check/package-dependencies.ts
 *
 * Exits 1 and names every mismatch, or prints how many packages it checked.
 */
import { builtinModules } from "node:module";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";

/** A workspace package as read from disk: its manifest and its TypeScript files' text. */
export interface WorkspacePackage {
  readonly dir: string;
  readonly name: string;
  readonly dependencies: Readonly<Record<string, string>>;
  readonly devDependencies: Readonly<Record<string, string>>;
  /** Path relative to the package, and text. */
  readonly files: ReadonlyMap<string, string>;
}

const BUILTINS = new Set(builtinModules);

/** Whether a file of a package only runs under test. */
export function isTestFile(path: string): boolean {
  const parts = path.split(/[\\/]/);
  return (
    parts.includes("test") ||
    path.endsWith(".spec.ts") ||
    path.endsWith(".test.ts") ||
    path === "vitest.config.ts"
  );
}

/** The packages a file imports (`import … from`, `export … from`, `import "…"`, `import()`). */
export function importedPackages(source: string): Set<string> {
  const out = new Set<string>();
  const statements =
    /(?:^|\n)\s*(?:import|export)\s[^;]*?\bfrom\s*["']([^"']+)["']|(?:^|\n)\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;
  for (const m of source.matchAll(statements)) {
    const specifier = (m[1] ?? m[2] ?? m[3]) as string;
    if (specifier.startsWith(".") || specifier.startsWith("/")) continue;
    if (specifier.startsWith("node:") || BUILTINS.has(specifier.split("/")[0] as string)) continue;
    const parts = specifier.split("/");
    out.add(specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string));
  }
  return out;
}

/** Every mismatch between what `pkg` imports and what it declares, as readable lines. */
export function mismatches(
  pkg: WorkspacePackage,
  rootVersions: Readonly<Record<string, string>>,
  workspaceNames: ReadonlySet<string>,
): string[] {
  const runtime = new Set<string>();
  const testOnly = new Set<string>();
  for (const [path, text] of pkg.files) {
    for (const name of importedPackages(text)) {
      if (name === pkg.name) continue;
      (isTestFile(path) ? testOnly : runtime).add(name);
    }
  }
  for (const name of runtime) testOnly.delete(name);
  const problems: string[] = [];
  const where = (name: string): string => `${pkg.name}: ${name}`;
  for (const name of runtime) {
    if (!(name in pkg.dependencies))
      problems.push(`${where(name)} is imported but not in dependencies`);
  }
  for (const name of testOnly) {
    if (name in pkg.dependencies) {
      problems.push(`${where(name)} is only used by tests: move it to devDependencies`);
    } else if (!(name in pkg.devDependencies)) {
      problems.push(`${where(name)} is imported by tests but not in devDependencies`);
    }
  }
  for (const [section, declared] of [
    ["dependencies", pkg.dependencies],
    ["devDependencies", pkg.devDependencies],
  ] as const) {
    for (const [name, version] of Object.entries(declared)) {
      if (!runtime.has(name) && !testOnly.has(name)) {
        problems.push(`${where(name)} is in ${section} but nothing imports it`);
      }
      // Workspace packages are linked ("*"); npm ones must be the version the root pins, when
      // the root names them at all (some are installed for one package only).
      const expected = workspaceNames.has(name) ? "*" : rootVersions[name];
      if (expected !== undefined && version !== expected) {
        problems.push(`${where(name)} is ${version} in ${section}; the root installs ${expected}`);
      }
    }
  }
  return problems;
}

function typescriptFiles(dir: string, root: string): [string, string][] {
  return readdirSync(dir).flatMap((entry): [string, string][] => {
    const path = join(dir, entry);
    // Generated code (`src/gen`, present once `proto:generate` ran) counts: what it imports
    // at run time is its package's dependency like any other.
    if (entry === "node_modules" || entry === "dist") return [];
    if (statSync(path).isDirectory()) return typescriptFiles(path, root);
    return entry.endsWith(".ts") ? [[relative(root, path), readFileSync(path, "utf8")]] : [];
  });
}

function readPackage(dir: string): WorkspacePackage {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    name: string;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  return {
    dir,
    name: manifest.name,
    dependencies: manifest.dependencies ?? {},
    devDependencies: manifest.devDependencies ?? {},
    files: new Map(typescriptFiles(dir, dir)),
  };
}

function main(): number {
  const root = JSON.parse(readFileSync("package.json", "utf8")) as {
    workspaces: string[];
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const dirs = root.workspaces.flatMap((pattern) =>
    pattern.endsWith("/*")
      ? readdirSync(pattern.slice(0, -2)).map((d) => join(pattern.slice(0, -2), d))
      : [pattern],
  );
  const packages = dirs.filter((d) => existsSync(join(d, "package.json"))).map(readPackage);
  const names = new Set(packages.map((p) => p.name));
  const versions = { ...root.devDependencies, ...root.dependencies };
  const problems = packages.flatMap((p) => mismatches(p, versions, names));
  for (const line of problems) console.error(line);
  if (problems.length > 0) {
    console.error(
      `${problems.length} dependency mismatch(es); see tools/check/package-dependencies.ts`,
    );
    return 1;
  }
  console.log(`every import declared in ${packages.length} workspace packages`);
  return 0;
}

if (process.argv[1]?.split(sep).join("/").endsWith("check/package-dependencies.ts") === true) {
  process.exitCode = main();
}
