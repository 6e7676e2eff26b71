import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Creates a fresh, empty directory under the OS temp dir, named `shoal-<prefix>-XXXXXX`.
 *
 * Kept short and under the temp dir on purpose: Unix socket paths are limited to about 100 bytes.
 */
export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `shoal-${prefix}-`));
}
