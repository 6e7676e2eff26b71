import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { hasGgufMagic } from "./gguf.js";
import { isJsonFile, WEIGHTS_FILE } from "./model-files.js";
import { ModelSourceError } from "./model-source-error.js";
import { InvalidSafetensorsError, readSafetensorsHeader } from "./safetensors.js";

/**
 * Checks that each named file in `dir` is a non-empty regular file, that JSON files parse as
 * JSON objects and that the weights are well-formed safetensors or start with the GGUF magic. Runs on a staging directory
 * before it gets its marker, and on `dir` sources, which are never written to.
 *
 * @throws ModelSourceError (`invalid-file`, `invalid-weights`, `not-found` or `io`)
 */
export async function validateModelFiles(
  dir: string,
  files: readonly string[],
  modelId: string,
): Promise<void> {
  for (const file of files) {
    const path = join(dir, file);
    const where = { modelId, file };
    let size: number;
    try {
      const info = await stat(path);
      if (!info.isFile())
        throw new ModelSourceError("invalid-file", `${path} is not a file`, where);
      size = info.size;
    } catch (cause) {
      if (cause instanceof ModelSourceError) throw cause;
      if (isErrno(cause, "ENOENT")) {
        throw new ModelSourceError("not-found", `${path} does not exist`, { ...where, cause });
      }
      throw new ModelSourceError("io", `cannot stat ${path}`, { ...where, cause });
    }
    if (size === 0) throw new ModelSourceError("invalid-file", `${path} is empty`, where);

    if (file === WEIGHTS_FILE || file.endsWith(".safetensors")) {
      try {
        await readSafetensorsHeader(path);
      } catch (cause) {
        const detail = cause instanceof Error ? cause.message : String(cause);
        if (cause instanceof InvalidSafetensorsError) {
          throw new ModelSourceError("invalid-weights", `not valid safetensors: ${detail}`, {
            ...where,
            cause,
          });
        }
        throw new ModelSourceError("io", `cannot read ${path}: ${detail}`, { ...where, cause });
      }
    } else if (file.endsWith(".gguf")) {
      let magic: boolean;
      try {
        magic = await hasGgufMagic(path);
      } catch (cause) {
        const detail = cause instanceof Error ? cause.message : String(cause);
        throw new ModelSourceError("io", `cannot read ${path}: ${detail}`, { ...where, cause });
      }
      if (!magic) {
        throw new ModelSourceError("invalid-weights", "not a GGUF file (no GGUF magic)", where);
      }
    } else if (isJsonFile(file)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readFile(path, "utf8"));
      } catch (cause) {
        throw new ModelSourceError("invalid-file", "does not parse as JSON", { ...where, cause });
      }
      if (typeof parsed !== "object" || parsed === null) {
        throw new ModelSourceError("invalid-file", "is JSON but not an object or array", where);
      }
    }
  }
}

/** Whether `error` is a Node system error with the given code. */
export function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
