import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

/** One filesystem layer: a gzipped tar and the digests the image refers to it by. */
export interface Layer {
  /** The gzipped tar, a file in the layout's blobs once written. */
  readonly path: string;
  /** sha256 of the gzipped bytes: the manifest's digest. */
  readonly digest: string;
  /** sha256 of the tar before compression: the config's diff_id. */
  readonly diffId: string;
  readonly size: number;
  readonly uncompressedSize: number;
}

/**
 * Makes a layer from a directory tree: a reproducible tar (sorted names, owner root, fixed
 * mtime, so the same files give the same digest and a shared layer is stored once), gzipped.
 */
export async function layerFromDir(dir: string, out: string): Promise<Layer> {
  const tar = execFileSync(
    "tar",
    [
      "--sort=name",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--mtime=@0",
      "--format=posix",
      "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
      "-C",
      dir,
      "-cf",
      "-",
      ".",
    ],
    { maxBuffer: 4 * 1024 ** 3 },
  );
  return layerFromTar(tar, out);
}

/** Makes a layer from tar bytes (a root filesystem mmdebstrap wrote, say). */
export async function layerFromTar(tar: Buffer, out: string): Promise<Layer> {
  const gz = gzipSync(tar, { level: 6 });
  await writeFile(out, gz);
  return {
    path: out,
    digest: `sha256:${sha256(gz)}`,
    diffId: `sha256:${sha256(tar)}`,
    size: gz.length,
    uncompressedSize: tar.length,
  };
}

export interface ImageConfig {
  readonly user: string;
  readonly entrypoint: readonly string[];
  readonly cmd?: readonly string[];
  readonly env: readonly string[];
  readonly workingDir: string;
  readonly exposedPorts: readonly number[];
  /** OCI annotations and labels: version, revision, source, title… */
  readonly labels: Readonly<Record<string, string>>;
  readonly created: string;
}

/**
 * Writes an OCI image archive (an image layout in a tar: `oci-layout`, `index.json`, blobs)
 * that `podman load`, `skopeo copy oci-archive:…` and registries' import tools read.
 * @returns the archive's size in bytes
 */
export async function writeOciArchive(
  archive: string,
  name: string,
  layers: readonly Layer[],
  config: ImageConfig,
  scratch: string,
): Promise<number> {
  const dir = join(scratch, "layout");
  await rm(dir, { recursive: true, force: true });
  const blobs = join(dir, "blobs", "sha256");
  await mkdir(blobs, { recursive: true });
  const blob = async (bytes: Buffer): Promise<{ digest: string; size: number }> => {
    const hex = sha256(bytes);
    await writeFile(join(blobs, hex), bytes);
    return { digest: `sha256:${hex}`, size: bytes.length };
  };
  for (const layer of layers) {
    await writeFile(join(blobs, layer.digest.slice("sha256:".length)), await readFile(layer.path));
  }
  const configBlob = await blob(
    Buffer.from(
      JSON.stringify({
        created: config.created,
        architecture: "amd64",
        os: "linux",
        config: {
          User: config.user,
          Env: config.env,
          Entrypoint: config.entrypoint,
          ...(config.cmd === undefined ? {} : { Cmd: config.cmd }),
          WorkingDir: config.workingDir,
          ExposedPorts: Object.fromEntries(config.exposedPorts.map((p) => [`${p}/tcp`, {}])),
          Labels: config.labels,
          StopSignal: "SIGTERM",
        },
        rootfs: { type: "layers", diff_ids: layers.map((l) => l.diffId) },
        history: layers.map(() => ({ created: config.created, created_by: "npm run images" })),
      }),
    ),
  );
  const manifest = await blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: { mediaType: "application/vnd.oci.image.config.v1+json", ...configBlob },
        layers: layers.map((l) => ({
          mediaType: "application/vnd.oci.image.layer.v1.tar+gzip",
          digest: l.digest,
          size: l.size,
        })),
        annotations: config.labels,
      }),
    ),
  );
  await writeFile(join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  await writeFile(
    join(dir, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [
        {
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          ...manifest,
          annotations: { "org.opencontainers.image.ref.name": name },
        },
      ],
    }),
  );
  execFileSync("tar", [
    "--sort=name",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "-C",
    dir,
    "-cf",
    archive,
    ".",
  ]);
  await rm(dir, { recursive: true, force: true });
  return (await stat(archive)).size;
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
