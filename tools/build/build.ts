/**
 * `npm run build`: the production build of every Shoal service. Each service becomes one ES
 * module bundle, `dist/<service>/main.mjs`, with every package it uses inside, started by plain
 * `node` (no tsx, no TypeScript, no node_modules at run time), and the files it reads at start
 * beside it in `share/` (the default catalog and the hardware bundles): a directory is all an
 * image needs besides Node.js.
 *
 * Usage: build.ts [--out DIR] [--source DIR] [service...]   (every service when none is named)
 *   --source builds another checkout (a release's, prepared by release-tree.ts) instead of
 *   this one; services it does not have yet are skipped.
 */
import { existsSync } from "node:fs";
import { cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { repoRoot } from "@shoal/testing";
import { SERVICES, SHARED_FILES, type ServiceBuild } from "./services.js";

const { values, positionals } = parseArgs({
  options: {
    out: { type: "string", default: join(repoRoot(), "dist") },
    source: { type: "string", default: repoRoot() },
  },
  allowPositionals: true,
});
const root = values.source;
const out = values.out;
// Another checkout (an older release) may predate some of today's services: those are left
// out of its build, named. In this checkout every service must build.
const present = (s: ServiceBuild): boolean => {
  if (root === repoRoot() || existsSync(join(root, s.entry))) return true;
  console.log(`[build] ${s.name}: not in ${root}, skipped`);
  return false;
};
const chosen = (positionals.length === 0 ? SERVICES : positionals.map(byName)).filter(present);

function byName(name: string): ServiceBuild {
  const service = SERVICES.find((s) => s.name === name);
  if (service === undefined) {
    const names = SERVICES.map((s) => s.name).join(", ");
    throw new Error(`no service "${name}" to build; services: ${names}`);
  }
  return service;
}

const { version } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
  version: string;
};

for (const service of chosen) {
  const started = performance.now();
  const dir = join(out, service.name);
  await rm(dir, { recursive: true, force: true });
  const result = await build({
    entryPoints: [join(root, service.entry)],
    outfile: join(dir, "main.mjs"),
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    sourcemap: "linked",
    metafile: true,
    logLevel: "warning",
    // Bundled CommonJS packages call require() for Node's modules; an ES module has none.
    banner: {
      js: 'import { createRequire as shoalCreateRequire } from "node:module"; const require = shoalCreateRequire(import.meta.url);',
    },
  });
  for (const [from, to] of Object.entries(service.assets ?? {})) {
    // Served files only: the type-checking config beside them stays in the repository.
    await cp(join(root, from), join(dir, to), {
      recursive: true,
      filter: (path) => !path.endsWith("tsconfig.json"),
    });
  }
  for (const file of SHARED_FILES) {
    await mkdir(dirname(join(dir, "share", file)), { recursive: true });
    await cp(join(root, file), join(dir, "share", file), { recursive: true });
  }
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  await writeFile(
    join(dir, "package.json"),
    `${JSON.stringify({ name: `shoal-${service.name}`, version, private: true, type: "module", main: "main.mjs" }, null, 2)}\n`,
  );
  const ms = Math.round(performance.now() - started);
  console.log(
    `[build] ${service.name}: ${join(dir, "main.mjs")} (${(bytes / 1e6).toFixed(1)} MB) in ${ms} ms`,
  );
}
