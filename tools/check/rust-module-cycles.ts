/**
 * Finds import circles between the modules of each crate in a Cargo workspace, as madge does
 * for the TypeScript projects: a module is a source file, and it depends on every module whose
 * items it names (`crate::a::b`, `super::x`, `self::child`, or a child module's name). Test-only
 * code (`#[cfg(test)]` items) is left out: tests may reach across modules freely. Rust compiles
 * such circles happily, which is why nothing else would catch them; they make a crate's layers
 * impossible to read or to split.
 *
 *   node --import tsx tools/check/rust-module-cycles.ts sidecar-rs
 *
 * Exits 1 and names every circle it finds.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";

/** A crate's modules by path (`""` is the crate root), each with the modules it names. */
export type ModuleGraph = ReadonlyMap<string, ReadonlySet<string>>;

const IDENT = "[A-Za-z_][A-Za-z0-9_]*";

/** The module graph of the crate whose `src` directory is `srcDir`. */
export function crateGraph(srcDir: string): ModuleGraph {
  const files = new Map<string, string>();
  for (const file of rustFiles(srcDir)) {
    const name = moduleOf(relative(srcDir, file));
    if (name !== undefined) files.set(name, readFileSync(file, "utf8"));
  }
  return graphOf(files);
}

/** The module graph of sources given by module path, for a crate read from disk or a test. */
export function graphOf(sources: ReadonlyMap<string, string>): ModuleGraph {
  const modules = new Set(sources.keys());
  const code = new Map(
    [...sources].map(([name, source]) => [name, withoutTests(withoutCommentsAndStrings(source))]),
  );
  const crate: Crate = { modules, reexports: new Map() };
  for (const [name, source] of code) {
    const names = new Map<string, string[]>();
    for (const { path, alias } of reexportedPaths(source)) {
      const absolute = absolutePath(name, path, modules);
      if (absolute !== undefined && alias !== undefined) names.set(alias, absolute);
    }
    crate.reexports.set(name, names);
  }
  const graph = new Map<string, Set<string>>();
  for (const [name, source] of code) {
    const deps = new Set<string>();
    for (const path of referencedPaths(source)) {
      const absolute = absolutePath(name, path, modules);
      if (absolute === undefined) continue;
      const target = owner(absolute, crate);
      if (target !== name) deps.add(target);
    }
    graph.set(name, deps);
  }
  return graph;
}

interface Crate {
  readonly modules: ReadonlySet<string>;
  /** Per module, the names its `pub use` makes public there, with the paths they come from. */
  readonly reexports: Map<string, ReadonlyMap<string, readonly string[]>>;
}

/** Modules that reach each other: one walk round the circle, and every module caught in it. */
export interface Circle {
  /** From the first module (by name) back to itself. */
  readonly path: readonly string[];
  readonly members: readonly string[];
}

/** Every circle of the graph: one per set of modules that all reach each other. */
export function cyclesOf(graph: ModuleGraph): Circle[] {
  const cycles: Circle[] = [];
  // Tarjan's strongly connected components; a component of two or more modules is a circle
  // (reported as one path through it, enough to find and break it).
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const visit = (v: string): void => {
    order.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, order.get(w) as number));
      }
    }
    if (low.get(v) !== order.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) {
      cycles.push({
        path: pathThrough(graph, new Set(component)),
        members: component.map(label).sort(),
      });
    }
  };
  for (const v of [...graph.keys()].sort()) if (!order.has(v)) visit(v);
  return cycles;
}

/** A closed walk from the component's first module back to itself, inside the component. */
function pathThrough(graph: ModuleGraph, component: ReadonlySet<string>): string[] {
  const start = [...component].sort()[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const w of [...(graph.get(v) ?? [])].sort()) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0] as string) as string);
        return [...path, start].map(label);
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [...component].map(label);
}

const label = (module: string): string => (module === "" ? "crate" : `crate::${module}`);

function rustFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return rustFiles(path);
    return entry.endsWith(".rs") ? [path] : [];
  });
}

/**
 * `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` is the root. A binary's `main.rs` beside a
 * `lib.rs` is a crate of its own that uses the library by name, so it is left out, as are
 * `bin/` targets.
 */
function moduleOf(file: string): string | undefined {
  const parts = file.split(sep);
  if (parts[0] === "bin" || file === "main.rs") return undefined;
  if (file === "lib.rs") return "";
  const last = (parts.pop() as string).replace(/\.rs$/, "");
  if (last !== "mod") parts.push(last);
  return parts.join("::");
}

/** Comments and string literals blanked out, so a path in a doc comment or message is no use. */
function withoutCommentsAndStrings(source: string): string {
  // Character literals first: `'"'` would otherwise open a string that swallows code.
  return source
    .replace(/'(?:[^'\\\n]|\\.)'/g, "' '")
    .replace(/\/\*[\s\S]*?\*\//g, " ")
    .replace(/\/\/.*$/gm, "")
    .replace(/\br#*"[\s\S]*?"#*/g, '""')
    .replace(/"(?:[^"\\]|\\[\s\S])*"/g, '""');
}

/** The source less every item under `#[cfg(test)]` (its braces matched). */
function withoutTests(source: string): string {
  let out = source;
  for (;;) {
    const at = out.search(/#\[cfg\(test\)\]/);
    if (at < 0) return out;
    const open = out.indexOf("{", at);
    const semicolon = out.indexOf(";", at);
    if (open < 0 || (semicolon >= 0 && semicolon < open)) {
      out = out.slice(0, at) + out.slice(semicolon + 1);
      continue;
    }
    let depth = 0;
    let end = open;
    for (; end < out.length; end++) {
      if (out[end] === "{") depth++;
      else if (out[end] === "}" && --depth === 0) break;
    }
    out = out.slice(0, at) + out.slice(end + 1);
  }
}

interface NamedPath {
  readonly base: "crate" | "super" | "self" | "use";
  readonly segments: readonly string[];
}

/** Every module path the source names: `use` trees expanded, plus inline `crate::`/`super::`. */
function referencedPaths(source: string): NamedPath[] {
  const paths: NamedPath[] = [];
  const useTree = new RegExp(`\\buse\\s+([^;]+);`, "g");
  for (const m of source.matchAll(useTree)) {
    for (const path of expandUse(compactUse(m[1] as string))) {
      const [head, ...rest] = path;
      if (head === "crate" || head === "super" || head === "self") {
        paths.push({ base: head, segments: rest });
      } else if (head !== undefined) {
        paths.push({ base: "use", segments: path });
      }
    }
  }
  const code = source.replace(useTree, "");
  const inline = new RegExp(`\\b(crate|super)((?:::${IDENT})+)`, "g");
  for (const m of code.matchAll(inline)) {
    paths.push({
      base: m[1] as "crate" | "super",
      segments: (m[2] as string).split("::").filter((s) => s !== ""),
    });
  }
  // A path that starts at a child module, `heads::decode(…)`: `resolve` keeps it only when
  // the first name is a child of the module it is in.
  const relative = new RegExp(`(?<![:\\w])(${IDENT})((?:::${IDENT})+)`, "g");
  for (const m of code.matchAll(relative)) {
    if (m[1] === "crate" || m[1] === "super" || m[1] === "self") continue;
    paths.push({
      base: "use",
      segments: [m[1] as string, ...(m[2] as string).split("::").filter((s) => s !== "")],
    });
  }
  return paths;
}

/** What each `pub use` (any visibility) makes public, and under which name. */
function reexportedPaths(source: string): { path: NamedPath; alias: string | undefined }[] {
  const out: { path: NamedPath; alias: string | undefined }[] = [];
  const pubUse = /\bpub(?:\([^)]*\))?\s+use\s+([^;]+);/g;
  for (const m of source.matchAll(pubUse)) {
    for (const raw of expandUse(compactUse(m[1] as string), true)) {
      const last = raw.at(-1) ?? "";
      const [name, alias] = last.split(" as ");
      const segments = [...raw.slice(0, -1), name as string];
      const [head, ...rest] = segments;
      const path: NamedPath =
        head === "crate" || head === "super" || head === "self"
          ? { base: head, segments: rest }
          : { base: "use", segments };
      out.push({ path, alias: alias ?? name });
    }
  }
  return out;
}

/** A `use` tree without whitespace, but for one space each side of `as`. */
function compactUse(tree: string): string {
  return tree
    .replace(/\s+as\s+/g, "\u0000")
    .replace(/\s+/g, "")
    .replaceAll("\u0000", " as ");
}

/** `a::{b::C, d}` → `[a, b, C]`, `[a, d]` (a compacted `use` tree). */
function expandUse(tree: string, keepAlias = false): string[][] {
  const brace = tree.indexOf("{");
  if (brace < 0) {
    const path = keepAlias ? tree : tree.replace(/\s*\bas\b.*$/, "");
    return [path.split("::").filter((s) => s !== "")];
  }
  const prefix = tree
    .slice(0, brace)
    .split("::")
    .filter((s) => s !== "");
  const inner = tree.slice(brace + 1, tree.lastIndexOf("}"));
  const branches: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === "{") depth++;
    else if (inner[i] === "}") depth--;
    else if (inner[i] === "," && depth === 0) {
      branches.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  branches.push(inner.slice(start));
  return branches
    .filter((b) => b !== "" && b !== "self")
    .flatMap((b) => expandUse(b, keepAlias).map((p) => [...prefix, ...p]))
    .concat(inner.split(",").includes("self") ? [prefix] : []);
}

/** The crate-absolute segments of a path named in module `from`; undefined for another crate. */
function absolutePath(
  from: string,
  path: NamedPath,
  modules: ReadonlySet<string>,
): string[] | undefined {
  const here = from === "" ? [] : from.split("::");
  switch (path.base) {
    case "crate":
      return [...path.segments];
    case "super": {
      const segments = [...path.segments];
      let base = here.slice(0, -1);
      while (segments[0] === "super") {
        segments.shift();
        base = base.slice(0, -1);
      }
      return [...base, ...segments];
    }
    case "self":
      return [...here, ...path.segments];
    case "use": {
      // A relative `use child::X` names a child module; anything else is another crate.
      const child = [...here, path.segments[0] as string].join("::");
      return modules.has(child) ? [...here, ...path.segments] : undefined;
    }
  }
}

/**
 * The module that defines what an absolute path names: its longest prefix that is a module,
 * followed through `pub use` re-exports (`crate::Error` re-exported from `error` is `error`'s).
 */
function owner(absolute: readonly string[], crate: Crate, depth = 0): string {
  for (let n = absolute.length; n >= 0; n--) {
    const module = absolute.slice(0, n).join("::");
    if (!crate.modules.has(module)) continue;
    const next = absolute[n];
    const source = next === undefined ? undefined : crate.reexports.get(module)?.get(next);
    if (source !== undefined && depth < 8)
      return owner([...source, ...absolute.slice(n + 1)], crate, depth + 1);
    return module;
  }
  return "";
}

function main(workspace: string): number {
  const crates = readdirSync(join(workspace, "crates")).sort();
  let modules = 0;
  let circles = 0;
  for (const crate of crates) {
    const graph = crateGraph(join(workspace, "crates", crate, "src"));
    modules += graph.size;
    for (const circle of cyclesOf(graph)) {
      circles++;
      console.error(`module circle: ${crate}: ${circle.path.join(" -> ")}`);
    }
  }
  if (circles > 0) return 1;
  console.log(`no module circles in ${crates.length} crates, ${modules} modules`);
  return 0;
}

if (process.argv[1]?.endsWith("rust-module-cycles.ts") === true) {
  process.exitCode = main(process.argv[2] ?? "sidecar-rs");
}
