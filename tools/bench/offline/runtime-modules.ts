/**
 * Prints, one per line and relative to the repository root, the `node_modules` entries the
 * services and the bench need at run time: every workspace package's dependencies and theirs,
 * plus tsx (services run from TypeScript source), resolved the way Node resolves them. Dev
 * tools (nx, eslint, prettier, vitest, buf) are left out, which is most of the bytes.
 *
 *   node --import tsx tools/bench/offline/runtime-modules.ts
 */
import { existsSync, readFileSync, readdirSync, realpathSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { repoRoot } from "@shoal/testing";

const root = repoRoot();

interface Manifest {
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly workspaces?: readonly string[];
}

function manifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;
}

/** Where `name` resolves from a package at `from` (its real path): the nearest node_modules. */
function resolve(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === root || dirname(dir) === dir) return undefined;
  }
}

const found = new Set<string>();
function visit(dir: string): void {
  const real = realpathSync(dir);
  const { dependencies = {}, optionalDependencies = {} } = manifest(real);
  for (const name of Object.keys({ ...dependencies, ...optionalDependencies })) {
    const path = resolve(name, real);
    // An optional dependency for another platform (fsevents) is not installed: skip it.
    if (path === undefined) {
      if (name in optionalDependencies) continue;
      throw new Error(`${name}, needed by ${relative(root, real) || "the root"}, is not installed`);
    }
    if (found.has(path)) continue;
    found.add(path);
    visit(path);
  }
}

visit(root);
visit(join(root, "node_modules", "tsx"));
found.add(join(root, "node_modules", "tsx"));
for (const pattern of manifest(root).workspaces ?? []) {
  const parent = join(root, pattern.replace(/\/\*$/, ""));
  const dirs = pattern.endsWith("/*") ? readdirSync(parent).map((d) => join(parent, d)) : [parent];
  for (const dir of dirs) if (existsSync(join(dir, "package.json"))) visit(dir);
}
for (const path of [...found].sort()) console.log(relative(root, path));
