/**
 * `npm run build`: the production build of every Shoal service. Each service becomes one ES
 * module bundle, `dist/<service>/main.mjs`, started by plain `node` (no tsx, no TypeScript at
 * run time), with the files it reads at start beside it in `share/` (the default catalog and
 * the hardware bundles). Packages that load native code or files of their own at run time stay
 * outside the bundle and are copied into `dist/<service>/node_modules/` with their own
 * dependencies, so a directory is all an image needs besides Node.js.
 *
 * Usage: build.ts [--out DIR] [service...]   (every service when none is named)
 */
import { cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { repoRoot } from "@shoal/testing";
import { copyExternals } from "./externals.js";
import { SERVICES, SHARED_FILES, type ServiceBuild } from "./services.js";

const root = repoRoot();
const { values, positionals } = parseArgs({
  options: { out: { type: "string", default: join(root, "dist") } },
  allowPositionals: true,
});
const out = values.out;
const chosen = positionals.length === 0 ? SERVICES : positionals.map(byName);

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
    external: service.externals,
    // Bundled CommonJS packages call require() for Node's modules; an ES module has none.
    banner: {
      js: 'import { createRequire as shoalCreateRequire } from "node:module"; const require = shoalCreateRequire(import.meta.url);',
    },
  });
  for (const file of SHARED_FILES) {
    await mkdir(dirname(join(dir, "share", file)), { recursive: true });
    await cp(join(root, file), join(dir, "share", file), { recursive: true });
  }
  const copied = await copyExternals(root, dir, service.externals);
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  await writeFile(
    join(dir, "package.json"),
    `${JSON.stringify({ name: `shoal-${service.name}`, version, private: true, type: "module", main: "main.mjs" }, null, 2)}\n`,
  );
  const ms = Math.round(performance.now() - started);
  console.log(
    `[build] ${service.name}: ${join(dir, "main.mjs")} (${(bytes / 1e6).toFixed(1)} MB` +
      `${copied.length > 0 ? `, with ${copied.join(", ")}` : ""}) in ${ms} ms`,
  );
}
