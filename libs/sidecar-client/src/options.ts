import { DEFAULT_MAX_FRAME_BYTES } from "./frame.js";

/** Options for {@link SidecarClient.connect}. */
export interface SidecarClientOptions {
  /** Path of the sidecar's Unix socket (the `--socket` it was started with). */
  readonly socketPath: string;
  /**
   * How long a request may wait for its response before it fails with
   * `SidecarTimeoutError`. A per-call `timeoutMs` overrides it; give `load` a longer one, since
   * reading weights can take far longer than a batch.
   *
   * @default 30000
   */
  readonly requestTimeoutMs?: number;
  /**
   * Largest frame body sent or accepted. Keep it equal to the sidecar's `--max-frame-bytes`:
   * a larger outgoing frame is refused locally rather than letting the sidecar close the
   * connection on every request in flight.
   *
   * @default 67108864 (64 MiB)
   */
  readonly maxFrameBytes?: number;
}

/** {@link SidecarClientOptions} validated, with every default filled in. */
export type CompiledSidecarClientOptions = Readonly<Required<SidecarClientOptions>>;

/** Defaults for the optional fields of {@link SidecarClientOptions}. */
export const DEFAULT_SIDECAR_CLIENT_OPTIONS = Object.freeze({
  requestTimeoutMs: 30_000,
  maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
});

/** Node's timers overflow (and fire at once) above this many milliseconds. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
const MAX_U32 = 0xffff_ffff;

/**
 * Validates options once and fills defaults.
 *
 * @throws TypeError when `socketPath` is not a non-empty string.
 * @throws RangeError when a number is out of range.
 */
export function compileSidecarClientOptions(
  options: SidecarClientOptions,
): CompiledSidecarClientOptions {
  if (typeof options.socketPath !== "string" || options.socketPath === "") {
    throw new TypeError("sidecar client: socketPath must be a non-empty string");
  }
  return Object.freeze({
    socketPath: options.socketPath,
    requestTimeoutMs: checkTimeout(
      "requestTimeoutMs",
      options.requestTimeoutMs ?? DEFAULT_SIDECAR_CLIENT_OPTIONS.requestTimeoutMs,
    ),
    maxFrameBytes: integerIn(
      "maxFrameBytes",
      options.maxFrameBytes ?? DEFAULT_SIDECAR_CLIENT_OPTIONS.maxFrameBytes,
      1,
      MAX_U32,
    ),
  });
}

/** Validates a timeout in milliseconds, for options and per-call overrides alike. */
export function checkTimeout(name: string, value: number): number {
  return integerIn(name, value, 1, MAX_TIMEOUT_MS);
}

function integerIn(name: string, value: number, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(
      `sidecar client: ${name} must be an integer in ${min}..${max}, got ${String(value)}`,
    );
  }
  return value;
}
