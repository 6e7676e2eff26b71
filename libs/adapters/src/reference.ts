/**
 * How inference requests name an adapter: `base[:name[@version]]`, e.g.
 * `HuggingFaceTB/SmolLM2-135M-Instruct:support-bot@2`. The base is a catalog id, which never
 * holds `:`, so the first `:` is where the adapter begins; a reference without a version means
 * the latest one.
 */

/** Adapter names: lower case, digits, `-` and `_`, at most 64, safe in KV keys and paths. */
export const ADAPTER_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** An adapter of some base model, by name and optionally by version. */
export interface AdapterReference {
  readonly name: string;
  /** A positive integer; unset means the latest version. */
  readonly version?: number;
}

/** A parsed `model` field: the base model, and the adapter when one is named. */
export interface ModelReference {
  /** The catalog id of the base model. */
  readonly base: string;
  readonly adapter?: AdapterReference;
}

/** A model or adapter reference that cannot be parsed; the message is safe to show the caller. */
export class InvalidModelReferenceError extends Error {
  override readonly name = "InvalidModelReferenceError";
}

/** Whether `name` is a valid adapter name (see {@link ADAPTER_NAME_PATTERN}). */
export function isAdapterName(name: string): boolean {
  return ADAPTER_NAME_PATTERN.test(name);
}

/**
 * Returns `name` when it is a valid adapter name.
 *
 * @throws InvalidModelReferenceError naming the rule it breaks.
 */
export function checkAdapterName(name: string): string {
  if (!isAdapterName(name)) {
    throw new InvalidModelReferenceError(
      `adapter name ${JSON.stringify(name)} is invalid: use 1 to 64 of a-z, 0-9, "-" and "_", ` +
        "starting with a letter or digit",
    );
  }
  return name;
}

/**
 * Returns `version` when it is a valid adapter version (a positive safe integer).
 *
 * @throws InvalidModelReferenceError otherwise.
 */
export function checkAdapterVersion(version: number): number {
  if (!Number.isSafeInteger(version) || version < 1) {
    throw new InvalidModelReferenceError(
      `adapter version ${String(version)} is invalid: versions are integers from 1`,
    );
  }
  return version;
}

/**
 * Parses `base[:name[@version]]`. Only the canonical spelling is accepted (a version without
 * leading zeros or sign), so {@link formatAdapterReference} gives the same string back and a
 * cache keyed by the string never holds one adapter twice.
 *
 * @throws InvalidModelReferenceError when the base is empty, the name is invalid or the version
 *   is not a positive integer.
 */
export function parseModelReference(model: string): ModelReference {
  const colon = model.indexOf(":");
  const base = colon === -1 ? model : model.slice(0, colon);
  if (base === "")
    throw new InvalidModelReferenceError(`model ${JSON.stringify(model)} names no base model`);
  if (colon === -1) return { base };
  const rest = model.slice(colon + 1);
  const at = rest.indexOf("@");
  const name = checkAdapterName(at === -1 ? rest : rest.slice(0, at));
  if (at === -1) return { base, adapter: { name } };
  const version = rest.slice(at + 1);
  if (!/^[1-9][0-9]*$/.test(version)) {
    throw new InvalidModelReferenceError(
      `adapter version ${JSON.stringify(version)} in ${JSON.stringify(model)} is invalid: ` +
        "versions are integers from 1",
    );
  }
  return { base, adapter: { name, version: checkAdapterVersion(Number(version)) } };
}

/**
 * `base:name` or `base:name@version`: the `model` a client sends to use an adapter.
 *
 * @throws InvalidModelReferenceError when the parts could not be parsed back.
 */
export function formatAdapterReference(base: string, adapter: AdapterReference): string {
  if (base === "" || base.includes(":")) {
    throw new InvalidModelReferenceError(
      `base model ${JSON.stringify(base)} is empty or holds ":"`,
    );
  }
  const name = checkAdapterName(adapter.name);
  return adapter.version === undefined
    ? `${base}:${name}`
    : `${base}:${name}@${checkAdapterVersion(adapter.version)}`;
}
