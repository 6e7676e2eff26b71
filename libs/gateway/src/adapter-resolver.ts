import type { AdapterSharing } from "./access.js";

/** An adapter as `/v1/models` lists it. */
export interface ListedAdapter extends AdapterSharing {
  /** What a request names to use its latest version: `<base id>:<name>`. */
  readonly model: string;
  /** The base model's catalog id. */
  readonly base: string;
  readonly latestVersion: number;
  /** When its first version was published, Unix seconds. */
  readonly created: number;
}

/** The version a request runs, and who may run it. */
export interface ResolvedAdapter extends AdapterSharing {
  readonly version: number;
}

/**
 * The adapters ingress can send work for: what the adapter registry has published, as this
 * process last saw it (a cache kept current by a watch, so resolving never waits on I/O).
 */
export interface AdapterResolver {
  /**
   * The version of adapter `name` of base model `baseKey` (its catalog key) a request runs
   * with: `version` itself when it is published, else the latest published one; `undefined`
   * when there is no such adapter or version. Whether the caller may run it is the caller's
   * check ({@link ModelAccess.seesAdapter}).
   */
  resolve(baseKey: string, name: string, version?: number): ResolvedAdapter | undefined;
  /** Every published adapter, sorted by what a request names; callers filter by access. */
  list(): ListedAdapter[];
}
