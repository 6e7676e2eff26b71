import { encode } from "@msgpack/msgpack";
import { map, oneOf, ResidencyRecordError, str, uint } from "./records.js";
import type { ReplicaState } from "./snapshot.js";

/**
 * The model-loader ↔ worker protocol, over core NATS with MessagePack bodies:
 *
 *   shoal.control.v1.<worker-id>     request/reply: the loader tells one worker to load/unload
 *   shoal.heartbeat.v1.<node-id>     each worker, every second: its memory and what it holds
 */
export const CONTROL_PREFIX = "shoal.control.v1";
export const HEARTBEAT_PREFIX = "shoal.heartbeat.v1";

const TOKEN = /^[A-Za-z0-9_-]+$/;

export function controlSubject(worker: string): string {
  if (!TOKEN.test(worker)) throw new ResidencyRecordError(`"${worker}" is not a valid worker id`);
  return `${CONTROL_PREFIX}.${worker}`;
}

export function heartbeatSubject(node: string): string {
  if (!TOKEN.test(node)) throw new ResidencyRecordError(`"${node}" is not a valid node id`);
  return `${HEARTBEAT_PREFIX}.${node}`;
}

/** Load a catalog model (by key) into the worker's sidecar and start pulling its work. */
export type ControlRequest =
  | { readonly op: "load"; readonly model: string }
  /** Stop pulling the model, let its batches in hand finish, and unload it. */
  | { readonly op: "unload"; readonly model: string };

/**
 * Codes of a refused control request: `oom` the sidecar could not fit the model, `failed` the
 * load failed for another reason, `unknown_model` not in the worker's catalog, `bad_request` the
 * request did not decode, `busy` the worker is already loading or unloading that model.
 */
export type ControlErrorCode = "oom" | "failed" | "unknown_model" | "bad_request" | "busy";

export type ControlReply =
  | {
      readonly ok: true;
      /** `load`: the sidecar's real size of the loaded model. */
      readonly memoryBytes?: number;
      /** `load`: how long the sidecar took. */
      readonly loadUs?: number;
    }
  | {
      readonly ok: false;
      readonly code: ControlErrorCode;
      readonly message: string;
      /** `oom` after the sidecar loaded the model and it did not fit: its real size. */
      readonly memoryBytes?: number;
    };

export interface HeartbeatModel {
  readonly model: string;
  readonly state: ReplicaState;
  /** The sidecar's `memory_bytes` once resident; 0 while loading. */
  readonly memoryBytes: number;
  /** Items the sidecar has computed for it since it was loaded (its `stats` counter). */
  readonly items: number;
  /** Batches the sidecar has run for it since it was loaded; absent from older workers. */
  readonly batches?: number;
  /** Microseconds the sidecar's model threads spent computing it since it was loaded. */
  readonly busyUs?: number;
  /** Items this worker pulled for it and handed back unrun, since it began pulling. */
  readonly putBacks?: number;
}

export interface Heartbeat {
  readonly worker: string;
  readonly node: string;
  /** Memory of the worker's accelerator, bytes. */
  readonly capacityBytes: number;
  readonly models: readonly HeartbeatModel[];
}

const OPS = ["load", "unload"] as const;
const CODES: readonly ControlErrorCode[] = [
  "oom",
  "failed",
  "unknown_model",
  "bad_request",
  "busy",
];
const STATES: readonly ReplicaState[] = ["loading", "resident", "evicting"];

export function encodeControl(message: ControlRequest | ControlReply | Heartbeat): Uint8Array {
  return encode(message, { ignoreUndefined: true });
}

/** @throws ResidencyRecordError for anything but a well-formed request. */
export function decodeControlRequest(bytes: Uint8Array): ControlRequest {
  const m = map(bytes);
  return { op: oneOf(m, "op", OPS), model: str(m, "model") };
}

/** @throws ResidencyRecordError for anything but a well-formed reply. */
export function decodeControlReply(bytes: Uint8Array): ControlReply {
  const m = map(bytes);
  if (m["ok"] === true) {
    return {
      ok: true,
      ...(m["memoryBytes"] === undefined ? {} : { memoryBytes: uint(m, "memoryBytes") }),
      ...(m["loadUs"] === undefined ? {} : { loadUs: uint(m, "loadUs") }),
    };
  }
  if (m["ok"] !== false) throw new ResidencyRecordError("ok must be a boolean");
  return {
    ok: false,
    code: oneOf(m, "code", CODES),
    message: str(m, "message"),
    ...(m["memoryBytes"] === undefined ? {} : { memoryBytes: uint(m, "memoryBytes") }),
  };
}

/** @throws ResidencyRecordError for anything but a well-formed heartbeat. */
export function decodeHeartbeat(bytes: Uint8Array): Heartbeat {
  const m = map(bytes);
  const models = m["models"];
  if (!Array.isArray(models) || models.length > 10_000) {
    throw new ResidencyRecordError("models must be an array of at most 10000 entries");
  }
  return {
    worker: str(m, "worker"),
    node: str(m, "node"),
    capacityBytes: uint(m, "capacityBytes"),
    models: models.map((raw: unknown) => {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        throw new ResidencyRecordError("models entries must be maps");
      }
      const e = raw as Record<string, unknown>;
      return {
        model: str(e, "model"),
        state: oneOf(e, "state", STATES),
        memoryBytes: uint(e, "memoryBytes"),
        items: uint(e, "items"),
        ...optionalUint(e, "batches"),
        ...optionalUint(e, "busyUs"),
        ...optionalUint(e, "putBacks"),
      };
    }),
  };
}

/** `{ key: value }` when the map has the field (an unsigned integer), `{}` when it has not. */
function optionalUint(m: Record<string, unknown>, key: string): Record<string, number> {
  return m[key] === undefined ? {} : { [key]: uint(m, key) };
}
