import { cp } from "node:fs/promises";
import { join } from "node:path";

/**
 * Copies each external package (and nothing it depends on: externals are chosen to have no
 * dependencies of their own) from the workspace's node_modules into `dir/node_modules`.
 * Returns the names copied.
 */
export async function copyExternals(
  root: string,
  dir: string,
  externals: readonly string[],
): Promise<string[]> {
  for (const name of externals) {
    await cp(join(root, "node_modules", name), join(dir, "node_modules", name), {
      recursive: true,
      dereference: true,
    });
  }
  return [...externals];
}
