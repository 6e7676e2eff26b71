import type { WorkMessageParts } from "@shoal/jetstream";
import type { FrameBody } from "@shoal/sidecar-client";
import {
  LOCAL_QUEUE_ERROR_CODES,
  LocalQueueError,
  type LocalQueueErrorCode,
} from "./local-queue-error.js";

/**
 * The local queue's wire protocol: the sidecar protocol's framing (u32 big-endian length, one
 * MessagePack map) with its own requests. The README documents every field.
 */

/** Most items one `put` may carry, and one `take` may ask for. */
export const MAX_ITEMS_PER_REQUEST = 4096;
/** Longest a `take` may wait for items to arrive. */
export const MAX_TAKE_WAIT_MS = 60_000;
const MAX_SUBJECT_CHARS = 1024;
const MAX_HEADERS_PER_ITEM = 64;
const MODEL_KEY = /^[A-Za-z0-9_-]{1,128}$/;

export type LocalQueueRequest =
  | {
      readonly id: number;
      readonly op: "put";
      readonly model: string;
      readonly items: WorkMessageParts[];
    }
  | {
      readonly id: number;
      readonly op: "take";
      readonly model: string;
      readonly max: number;
      readonly waitMs: number;
    }
  | { readonly id: number; readonly op: "cancel"; readonly target: number }
  | { readonly id: number; readonly op: "stats" };

/** Counters since the local queue started, and what it holds now. */
export interface LocalQueueStats {
  /** Items held now, waiting for a local taker. */
  readonly held: number;
  readonly heldBytes: number;
  /** Items accepted by `put`. */
  readonly accepted: number;
  /** Items `put` could not take because the queue was full (their putter NAKed them). */
  readonly refused: number;
  /** Items handed to a local taker. */
  readonly handed: number;
  /** Items NAKed back to JetStream: nobody local took them in time, or on shutdown. */
  readonly returned: number;
}

/** The request id of a frame, when it has a usable one (errors about it are answered with 0 otherwise). */
export function requestId(body: FrameBody): number | undefined {
  const id = body["id"];
  return typeof id === "number" && Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/**
 * Reads a request frame, checking every field, so hostile or corrupt input is refused with a
 * message naming the field instead of reaching the queue.
 *
 * @throws LocalQueueError `bad_request` naming the first wrong field.
 */
export function parseRequest(body: FrameBody): LocalQueueRequest {
  const id = requestId(body);
  if (id === undefined) throw badRequest("id must be a positive integer");
  const op = body["op"];
  switch (op) {
    case "put": {
      const items = body["items"];
      if (!Array.isArray(items) || items.length === 0 || items.length > MAX_ITEMS_PER_REQUEST) {
        throw badRequest(`items must be an array of 1..${MAX_ITEMS_PER_REQUEST} items`);
      }
      return { id, op, model: modelKey(body), items: items.map((it, i) => partsFromWire(it, i)) };
    }
    case "take":
      return {
        id,
        op,
        model: modelKey(body),
        max: boundedUint(body, "max", 1, MAX_ITEMS_PER_REQUEST),
        waitMs: boundedUint(body, "wait_ms", 0, MAX_TAKE_WAIT_MS),
      };
    case "cancel":
      return { id, op, target: boundedUint(body, "target", 1, Number.MAX_SAFE_INTEGER) };
    case "stats":
      return { id, op };
    default:
      throw badRequest(`unknown op ${JSON.stringify(typeof op === "string" ? op : String(op))}`);
  }
}

/** One handed-over item as it travels: a map, data as `bin`, headers as `[name, value]` pairs. */
export function partsToWire(parts: WorkMessageParts): Record<string, unknown> {
  return {
    subject: parts.subject,
    reply: parts.reply,
    headers: parts.headers.map(([k, v]) => [k, v]),
    data: parts.data,
  };
}

/**
 * Reads one wire item back.
 *
 * @throws LocalQueueError `bad_request` naming the item and field.
 */
export function partsFromWire(value: unknown, index: number): WorkMessageParts {
  const where = `items[${index}]`;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest(`${where} must be a map`);
  }
  const v = value as Record<string, unknown>;
  const subject = v["subject"];
  const reply = v["reply"];
  const data = v["data"];
  const headers = v["headers"];
  if (typeof subject !== "string" || subject.length === 0 || subject.length > MAX_SUBJECT_CHARS) {
    throw badRequest(`${where}.subject must be a string of 1..${MAX_SUBJECT_CHARS} characters`);
  }
  if (
    typeof reply !== "string" ||
    !reply.startsWith("$JS.ACK.") ||
    reply.length > MAX_SUBJECT_CHARS
  ) {
    throw badRequest(`${where}.reply must be a JetStream ack subject`);
  }
  if (!(data instanceof Uint8Array)) throw badRequest(`${where}.data must be bin`);
  if (!Array.isArray(headers) || headers.length > MAX_HEADERS_PER_ITEM) {
    throw badRequest(`${where}.headers must be an array of at most ${MAX_HEADERS_PER_ITEM} pairs`);
  }
  const pairs: (readonly [string, string])[] = [];
  for (const pair of headers as unknown[]) {
    if (
      !Array.isArray(pair) ||
      pair.length !== 2 ||
      typeof pair[0] !== "string" ||
      typeof pair[1] !== "string" ||
      pair[0].length === 0
    ) {
      throw badRequest(`${where}.headers must hold [name, value] string pairs`);
    }
    pairs.push([pair[0], pair[1]]);
  }
  return { subject, reply, headers: pairs, data };
}

/** Bytes an item holds in memory, for the queue's byte bound. */
export function partsBytes(parts: WorkMessageParts): number {
  let n = parts.data.byteLength + parts.subject.length + parts.reply.length;
  for (const [k, v] of parts.headers) n += k.length + v.length;
  return n;
}

/** The error response body for `code`. */
export function errorBody(id: number, code: LocalQueueErrorCode, message: string): FrameBody {
  return { id, ok: false, code, message };
}

/**
 * Reads a response: its id, and either its body or the error it carries.
 *
 * @throws LocalQueueError `bad_frame` when the frame is not a response.
 */
export function parseResponse(body: FrameBody): {
  id: number;
  error?: LocalQueueError;
  body: FrameBody;
} {
  const id = body["id"];
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) {
    throw new LocalQueueError("bad_frame", "local queue response without an id");
  }
  if (body["ok"] === true) return { id, body };
  const code = body["code"];
  const message = body["message"];
  const known = LOCAL_QUEUE_ERROR_CODES.find((c) => c === code);
  return {
    id,
    body,
    error: new LocalQueueError(
      known ?? "bad_frame",
      typeof message === "string" ? message : "local queue error without a message",
    ),
  };
}

/**
 * Reads an unsigned field of a response.
 *
 * @throws LocalQueueError `bad_frame` when it is missing or not an unsigned integer.
 */
export function responseUint(body: FrameBody, key: string): number {
  const value = body[key];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new LocalQueueError(
      "bad_frame",
      `local queue response field ${key} is not an unsigned integer`,
    );
  }
  return value;
}

function modelKey(body: FrameBody): string {
  const model = body["model"];
  if (typeof model !== "string" || !MODEL_KEY.test(model)) {
    throw badRequest("model must be a model key (1..128 of A-Z a-z 0-9 _ -)");
  }
  return model;
}

function boundedUint(body: FrameBody, key: string, min: number, max: number): number {
  const value = body[key];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw badRequest(`${key} must be an integer in ${min}..${max}`);
  }
  return value;
}

function badRequest(message: string): LocalQueueError {
  return new LocalQueueError("bad_request", message);
}
