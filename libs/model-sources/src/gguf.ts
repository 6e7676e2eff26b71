import { open } from "node:fs/promises";

/** The first four bytes of every GGUF file (any version). */
export const GGUF_MAGIC = Buffer.from("GGUF", "ascii");

/**
 * Whether the file starts with {@link GGUF_MAGIC}. Only the magic is checked here: the sidecar
 * parses the header and metadata itself and refuses what it cannot read, while this catches
 * the likelier accident of an HTML error page or a pickle saved under the `.gguf` name before
 * it is promoted as a complete model.
 */
export async function hasGgufMagic(path: string): Promise<boolean> {
  const file = await open(path, "r");
  try {
    const head = Buffer.alloc(GGUF_MAGIC.length);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    return bytesRead === head.length && head.equals(GGUF_MAGIC);
  } finally {
    await file.close();
  }
}
