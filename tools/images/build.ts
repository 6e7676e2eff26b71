/**
 * `npm run images`: one OCI image per Shoal service, built offline from Debian's packages and
 * this checkout, written as OCI archives to dist/images/shoal-<name>.tar (load one with
 * `podman load -i`, or push it with `skopeo copy oci-archive:… docker://…`). Then each image is
 * started by podman and must answer its health check (tools/images/smoke.ts; `--no-smoke`
 * skips that). Sizes go to dist/images/images.json and docs/deploy.md.
 *
 * Layers, shared where they can be: a Debian bookworm minbase root filesystem made by
 * mmdebstrap (with ca-certificates and the `shoal` user, uid 10001; cached in
 * $SHOAL_HOME/images), Node.js (this machine's `node`, 20.19 or later), then the service's
 * production build (`npm run build`) in /app and its binaries (the sidecar, nats-server).
 * Every image runs as `shoal`, carries the OCI labels (version, revision, source, created) and
 * serves /healthz and /readyz.
 *
 * Usage: build.ts [--no-smoke] [--out DIR] [image...]
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, copyFile, cp, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { repoRoot, shoalHome } from "@shoal/testing";
import { IMAGES, type ImageSpec } from "./images.js";
import { layerFromDir, layerFromTar, writeOciArchive, type Layer } from "./oci.js";
import { smokeTest } from "./smoke.js";

const root = repoRoot();
const { values, positionals } = parseArgs({
  options: {
    out: { type: "string", default: join(root, "dist/images") },
    "no-smoke": { type: "boolean", default: false },
  },
  allowPositionals: true,
});
const out = values.out;
const chosen =
  positionals.length === 0
    ? IMAGES
    : positionals.map((n) => {
        const spec = IMAGES.find((i) => i.name === n);
        if (spec === undefined)
          throw new Error(`no image ${n}; images: ${IMAGES.map((i) => i.name).join(", ")}`);
        return spec;
      });

const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { version: string };
const revision = execFileSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
const dirty =
  execFileSync("git", ["status", "--porcelain"], { cwd: root, encoding: "utf8" }).trim() !== "";
const created = new Date(
  Number(
    execFileSync("git", ["log", "-1", "--format=%ct"], { cwd: root, encoding: "utf8" }).trim(),
  ) * 1000,
).toISOString();
const scratch = join(out, ".scratch");
await rm(scratch, { recursive: true, force: true });
await mkdir(scratch, { recursive: true });

const step = (what: string): (() => void) => {
  const started = performance.now();
  return () => {
    console.log(`[images] ${what} ${((performance.now() - started) / 1000).toFixed(1)}s`);
  };
};

let done = step("production build (npm run build)");
const dist = join(scratch, "dist");
execFileSync("node", ["--import", "tsx", "tools/build/build.ts", "--out", dist], {
  cwd: root,
  stdio: "ignore",
});
done();

done = step("base layer (Debian bookworm minbase)");
const base = await layerFromTar(await readFile(await baseRootfs()), join(scratch, "base.tar.gz"));
done();

done = step("Node.js layer");
const nodeDir = join(scratch, "node-root");
await mkdir(join(nodeDir, "usr/local/bin"), { recursive: true });
await copyFile(process.execPath, join(nodeDir, "usr/local/bin/node"));
const node = await layerFromDir(nodeDir, join(scratch, "node.tar.gz"));
done();

/** Per image: all its layers, and its own (the ones no other image shares). */
const report: Record<
  string,
  { bytes: number; uncompressedBytes: number; ownBytes: number; layers: number }
> = {};
for (const spec of chosen) {
  done = step(`shoal-${spec.name}`);
  const app = await appLayer(spec);
  const layers = spec.node ? [base, node, app] : [base, app];
  const archive = join(out, `shoal-${spec.name}.tar`);
  await writeOciArchive(
    archive,
    `shoal-${spec.name}:${pkg.version}`,
    layers,
    {
      user: "10001:10001",
      entrypoint: spec.entrypoint,
      ...(spec.cmd === undefined ? {} : { cmd: spec.cmd }),
      env: ["PATH=/usr/local/bin:/usr/bin:/bin", "NODE_ENV=production", ...(spec.env ?? [])],
      workingDir: "/app",
      exposedPorts: spec.ports,
      labels: {
        "org.opencontainers.image.title": `shoal-${spec.name}`,
        "org.opencontainers.image.version": pkg.version,
        "org.opencontainers.image.revision": dirty ? `${revision}-dirty` : revision,
        "org.opencontainers.image.source": "https://github.com/shoal-inference/shoal",
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.created": created,
      },
      created,
    },
    scratch,
  );
  report[`shoal-${spec.name}`] = {
    bytes: layers.reduce((n, l) => n + l.size, 0),
    uncompressedBytes: layers.reduce((n, l) => n + l.uncompressedSize, 0),
    ownBytes: app.size,
    layers: layers.length,
  };
  done();
}
await writeFile(
  join(out, "images.json"),
  `${JSON.stringify({ version: pkg.version, revision, sharedLayers: { base: base.size, node: node.size }, images: report }, null, 2)}\n`,
);
for (const [name, r] of Object.entries(report)) {
  console.log(
    `[images] ${name.padEnd(22)} ${(r.bytes / 2 ** 20).toFixed(1).padStart(6)} MiB compressed, ` +
      `${(r.uncompressedBytes / 2 ** 20).toFixed(1).padStart(6)} MiB on disk, ` +
      `${(r.ownBytes / 2 ** 20).toFixed(1).padStart(5)} MiB its own`,
  );
}
await rm(scratch, { recursive: true, force: true });

// The CUDA worker (the chart's worker-cuda image) needs the sidecar built against the CUDA
// toolkit; this command builds the CPU images only.
console.log(
  "[images] shoal-worker-cuda not built: it needs a CUDA build of the sidecar (not made here)",
);

if (!values["no-smoke"]) {
  done = step("smoke test: every image started by podman answers its health check");
  await smokeTest(out, chosen, pkg.version);
  done();
}

/**
 * The base root filesystem as a tar, made by mmdebstrap from the machine's Debian sources and
 * kept in $SHOAL_HOME/images (about 45 s to make).
 */
async function baseRootfs(): Promise<string> {
  const cache = join(shoalHome(), "images");
  const tar = join(cache, "base-bookworm-minbase-v1.tar");
  if (existsSync(tar)) return tar;
  await mkdir(cache, { recursive: true });
  // mmdebstrap picks its output format by the name: the partial file must end in .tar too.
  const partial = tar.replace(/\.tar$/, ".partial.tar");
  execFileSync(
    "mmdebstrap",
    [
      "--variant=minbase",
      "--include=ca-certificates",
      "--dpkgopt=path-exclude=/usr/share/doc/*",
      "--dpkgopt=path-exclude=/usr/share/man/*",
      "--dpkgopt=path-exclude=/usr/share/locale/*",
      '--customize-hook=chroot "$1" useradd --uid 10001 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin shoal',
      // Where services write: their model cache, sockets; owned by the user they run as.
      '--customize-hook=mkdir -p "$1"/var/cache/shoal "$1"/app && chown 10001:10001 "$1"/var/cache/shoal',
      '--customize-hook=rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*',
      "bookworm",
      partial,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  await rename(partial, tar);
  return tar;
}

/** The layer of one image: its build in /app, its binaries in /usr/local/bin. */
async function appLayer(spec: ImageSpec): Promise<Layer> {
  const dir = join(scratch, `app-${spec.name}`);
  await rm(dir, { recursive: true, force: true });
  if (spec.build !== undefined)
    await cp(join(dist, spec.build), join(dir, "app"), { recursive: true });
  for (const [name, path] of Object.entries(spec.binaries?.() ?? {})) {
    if (!existsSync(path))
      throw new Error(
        `shoal-${spec.name} needs ${name}, not found at "${path}"; run npm run setup`,
      );
    await mkdir(join(dir, "usr/local/bin"), { recursive: true });
    await copyFile(path, join(dir, "usr/local/bin", name));
    await chmod(join(dir, "usr/local/bin", name), 0o755);
  }
  return layerFromDir(dir, join(scratch, `app-${spec.name}.tar.gz`));
}
