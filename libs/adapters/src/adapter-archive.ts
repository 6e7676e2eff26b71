import { CONFIG_FILE, InvalidAdapterError, WEIGHTS_FILE, type AdapterFiles } from "./peft.js";
import { readTar, type TarFiles, type TarLimits } from "./tar.js";

/** How many of an archive's file names a message lists. */
const LISTED = 8;

/**
 * Reads an uploaded adapter directory archive (tar or tar.gz, from a stream) and picks out its
 * two files, at the top of the archive or under its one leading directory. Other files
 * (README.md, training logs) are read within the limits and dropped; nothing is written.
 *
 * @throws ArchiveTooLargeError, InvalidArchiveError from {@link readTar}.
 * @throws InvalidAdapterError when either file is missing, saying what the archive holds.
 */
export async function readAdapterArchive(
  source: AsyncIterable<Uint8Array>,
  limits?: TarLimits,
): Promise<AdapterFiles> {
  return adapterFilesOf(await readTar(source, limits));
}

/** The adapter's two files among an archive's, or an error saying which is missing. */
export function adapterFilesOf(files: TarFiles): AdapterFiles {
  const config = files.get(CONFIG_FILE);
  const weights = files.get(WEIGHTS_FILE);
  if (config !== undefined && weights !== undefined) return { config, weights };
  const missing = [
    config === undefined ? CONFIG_FILE : [],
    weights === undefined ? WEIGHTS_FILE : [],
  ].flat();
  const names = [...files.keys()];
  const held =
    names.length === 0
      ? "no files"
      : `${names.slice(0, LISTED).join(", ")}${names.length > LISTED ? `, and ${names.length - LISTED} more` : ""}`;
  const pickled = weights === undefined && names.some((n) => n.endsWith("adapter_model.bin"));
  throw new InvalidAdapterError(
    `the archive has no ${missing.join(" and no ")} at its top level (it holds ${held})` +
      (pickled
        ? "; pickled adapter_model.bin is not accepted: save with safe_serialization=True"
        : ""),
  );
}
