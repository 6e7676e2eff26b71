import { decode, encode } from "@msgpack/msgpack";
import type { ReplicaState } from "./snapshot.js";

/**
 * The JetStream KV bucket where each node's model-loader publishes residency, for workers,
 * ingress and operators to read. Values are MessagePack maps.
 *
 *   replica.<model-key>.<worker-id>   a copy of a model on a worker: loading, resident, evicting
 *   model.<model-key>                 the model's own state: fetching, ready, failed, unplaceable
 *
 * A replica's key disappears when the copy is unloaded, or when its worker stops sending
 * heartbeats.
 */
export const RESIDENCY_BUCKET = "SHOAL_RESIDENCY";

export interface ReplicaRecord {
  /** Catalog key. */
  readonly model: string;
  readonly worker: string;
  readonly node: string;
  readonly state: ReplicaState;
  /** Real `memory_bytes` once resident, the expected size before. */
  readonly memoryBytes: number;
  readonly sinceUnixMs: number;
}

export type ModelState = "fetching" | "ready" | "failed" | "unplaceable";

export interface ModelRecord {
  readonly model: string;
  readonly state: ModelState;
  /** Why it failed or cannot be placed; absent otherwise. */
  readonly message?: string;
  /** Fetch progress while `fetching`. */
  readonly bytesDone?: number;
  readonly bytesTotal?: number;
  readonly updatedUnixMs: number;
}

/** A record that does not decode: another version wrote it, or someone wrote garbage. */
export class ResidencyRecordError extends Error {
  override readonly name = "ResidencyRecordError";
}

const TOKEN = /^[A-Za-z0-9_-]+$/;

export function replicaKey(model: string, worker: string): string {
  return `replica.${token(model)}.${token(worker)}`;
}

/** Every replica of one model, for a KV watch or keys listing. */
export function replicaKeyFilter(model: string): string {
  return `replica.${token(model)}.*`;
}

export function modelKey(model: string): string {
  return `model.${token(model)}`;
}

const REPLICA_STATES: readonly ReplicaState[] = ["loading", "resident", "evicting"];
const MODEL_STATES: readonly ModelState[] = ["fetching", "ready", "failed", "unplaceable"];

export function encodeReplica(r: ReplicaRecord): Uint8Array {
  return encode(r);
}

export function decodeReplica(bytes: Uint8Array): ReplicaRecord {
  const m = map(bytes);
  return {
    model: str(m, "model"),
    worker: str(m, "worker"),
    node: str(m, "node"),
    state: oneOf(m, "state", REPLICA_STATES),
    memoryBytes: uint(m, "memoryBytes"),
    sinceUnixMs: uint(m, "sinceUnixMs"),
  };
}

export function encodeModel(r: ModelRecord): Uint8Array {
  return encode(r, { ignoreUndefined: true });
}

export function decodeModel(bytes: Uint8Array): ModelRecord {
  const m = map(bytes);
  const message = m["message"];
  if (message !== undefined && typeof message !== "string") {
    throw new ResidencyRecordError("model record: message must be a string");
  }
  return {
    model: str(m, "model"),
    state: oneOf(m, "state", MODEL_STATES),
    ...(message === undefined ? {} : { message }),
    ...(m["bytesDone"] === undefined ? {} : { bytesDone: uint(m, "bytesDone") }),
    ...(m["bytesTotal"] === undefined ? {} : { bytesTotal: uint(m, "bytesTotal") }),
    updatedUnixMs: uint(m, "updatedUnixMs"),
  };
}

function token(t: string): string {
  if (!TOKEN.test(t)) throw new ResidencyRecordError(`"${t}" is not a valid key token`);
  return t;
}

/** Decodes MessagePack that must be a map with string keys. Shared with the control codec. */
export function map(bytes: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = decode(bytes);
  } catch (cause) {
    throw new ResidencyRecordError("not MessagePack", { cause });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ResidencyRecordError("not a MessagePack map");
  }
  if (value instanceof Uint8Array || value instanceof Map) {
    throw new ResidencyRecordError("not a MessagePack map with string keys");
  }
  return value as Record<string, unknown>;
}

export function str(m: Record<string, unknown>, key: string): string {
  const v = m[key];
  if (typeof v !== "string" || v === "") {
    throw new ResidencyRecordError(`${key} must be a non-empty string`);
  }
  return v;
}

export function uint(m: Record<string, unknown>, key: string): number {
  const v = m[key];
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new ResidencyRecordError(`${key} must be an unsigned integer`);
  }
  return v;
}

export function oneOf<T extends string>(
  m: Record<string, unknown>,
  key: string,
  values: readonly T[],
): T {
  const v = m[key];
  if (typeof v !== "string" || !(values as readonly string[]).includes(v)) {
    throw new ResidencyRecordError(`${key} must be one of ${values.join(", ")}`);
  }
  return v as T;
}
