import { execFileSync } from "node:child_process";
import { mkdir, readdir, readlink, symlink } from "node:fs/promises";
import { join } from "node:path";

/**
 * Prepares the sources of commit `commit` in `dir` so that `build.ts --source dir` can build
 * them: the tree as committed (`git archive`), a node_modules whose third-party packages are
 * this checkout's (links, nothing copied) and whose workspace packages are the old tree's own,
 * and the old tree's protobuf code generated from its own proto/. What comes out is the old
 * version's code, bundled with today's third-party packages: the wire and the services are the
 * release's, which is what a test of two versions side by side needs.
 */
export async function prepareReleaseTree(root: string, commit: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const archive = execFileSync("git", ["archive", "--format=tar", commit], {
    cwd: root,
    maxBuffer: 1024 ** 3,
  });
  execFileSync("tar", ["-x", "-C", dir], { input: archive });
  const modules = join(root, "node_modules");
  const mirror = join(dir, "node_modules");
  await mkdir(mirror, { recursive: true });
  for (const entry of await readdir(modules)) {
    if (entry === "@shoal") continue;
    await symlink(join(modules, entry), join(mirror, entry));
  }
  // Workspace packages are relative links (../../libs/config): the same links here point at
  // the old tree's packages.
  await mkdir(join(mirror, "@shoal"));
  for (const name of await readdir(join(modules, "@shoal"))) {
    await symlink(await readlink(join(modules, "@shoal", name)), join(mirror, "@shoal", name));
  }
  execFileSync(join(modules, ".bin", "buf"), ["generate"], {
    cwd: join(dir, "libs/proto"),
    stdio: "ignore",
  });
}
