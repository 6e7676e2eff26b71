import {
  InvalidModelReferenceError,
  parseModelReference,
  type AdapterReference,
} from "@shoal/adapters";
import { SAMPLING_RANGES, type ModelEntry } from "@shoal/config";
import type { Priority } from "@shoal/proto";
import type { Principal } from "@shoal/tenants";
import type { ModelAccess } from "./access.js";
import { InvalidArgumentError } from "./errors.js";

/** One chat turn. */
export interface ChatTurn {
  readonly role: string;
  readonly content: string;
}

/** A generation request as every protocol hands it to {@link StreamGateway.generate}. */
export interface GenerateCall {
  /** A catalog generator, or one of its LoRA adapters: `base:adapter[@version]`. */
  readonly model: string;
  /** Exactly one of `prompt` and `messages`. */
  readonly prompt?: string;
  readonly messages?: readonly ChatTurn[];
  /** Sequences to generate. @default 1 */
  readonly n?: number;
  /** @default the sidecar's (256) */
  readonly maxTokens?: number;
  /** Unset sampling fields take the model's defaults (its catalog entry's `sampling`). */
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly minP?: number;
  readonly repetitionPenalty?: number;
  readonly seed?: number;
  readonly stop?: readonly string[];
  readonly priority?: Priority;
  /** Time the client allows until generation starts; clamped to `maxTimeoutMs`. */
  readonly timeoutMs?: number;
  /** Refuse at once, with a retry hint, when no copy of the model is resident. */
  readonly noWait?: boolean;
  /** Whom the call acts for: its API key's principal; none on an open cluster. */
  readonly caller?: Principal | undefined;
}

/** Limits a generation request must respect, checked before anything is queued. */
export interface GenerateLimits {
  /** @default 8 */
  readonly maxN: number;
  /** @default 4096 */
  readonly maxTokens: number;
  /** Longest prompt, or sum of message contents, in UTF-16 code units. @default 200_000 */
  readonly maxPromptChars: number;
  /** @default 256 */
  readonly maxMessages: number;
}

export const DEFAULT_GENERATE_LIMITS: GenerateLimits = Object.freeze({
  maxN: 8,
  maxTokens: 4096,
  maxPromptChars: 200_000,
  maxMessages: 256,
});

const ROLES = new Set(["system", "user", "assistant", "developer", "tool"]);
/** The sidecar's limits on stop strings (docs/sidecar-protocol.md, `generate`). */
const MAX_STOPS = 8;
const MAX_STOP_BYTES = 256;
/** Seeds travel as u64 but JSON clients send doubles: only exact integers are accepted. */
const MAX_SEED = Number.MAX_SAFE_INTEGER;

/** What a valid generation request runs on: a catalog generator, and maybe an adapter of it. */
export interface GenerateTarget {
  readonly model: ModelEntry;
  readonly adapter?: AdapterReference;
}

/**
 * Checks a generation request without tokenizing: a known generator (and the syntax of the
 * adapter it names, if any), one prompt form, and every sampling parameter within the range the
 * sidecar accepts, so nothing the sidecar would refuse is ever queued.
 */
export function validateGenerate(
  access: ModelAccess,
  call: GenerateCall,
  limits: GenerateLimits,
): GenerateTarget {
  let reference;
  try {
    reference = parseModelReference(call.model);
  } catch (err) {
    if (err instanceof InvalidModelReferenceError) throw new InvalidArgumentError(err.message);
    throw err;
  }
  const entry = access.model(reference.base);
  if (entry.family !== "generator") {
    throw new InvalidArgumentError(`model "${call.model}" is a ${entry.family}, not a generator`);
  }
  if ((call.prompt === undefined) === (call.messages === undefined)) {
    throw new InvalidArgumentError("exactly one of prompt and messages is required");
  }
  if (call.prompt !== undefined) {
    if (call.prompt.length === 0) throw new InvalidArgumentError("prompt must not be empty");
    if (call.prompt.length > limits.maxPromptChars) {
      throw new InvalidArgumentError(`prompt is longer than ${limits.maxPromptChars} characters`);
    }
  }
  if (call.messages !== undefined) checkMessages(call.messages, limits);
  intIn("n", call.n, 1, limits.maxN);
  intIn("max_tokens", call.maxTokens, 1, limits.maxTokens);
  numberIn("temperature", call.temperature, SAMPLING_RANGES.temperature);
  numberIn("top_p", call.topP, SAMPLING_RANGES.topP);
  numberIn("min_p", call.minP, SAMPLING_RANGES.minP);
  numberIn("repetition_penalty", call.repetitionPenalty, SAMPLING_RANGES.repetitionPenalty);
  intIn("top_k", call.topK, 0, 1_000_000);
  intIn("seed", call.seed, 0, MAX_SEED);
  if (call.stop !== undefined) {
    if (call.stop.length > MAX_STOPS) {
      throw new InvalidArgumentError(
        `at most ${MAX_STOPS} stop sequences, got ${call.stop.length}`,
      );
    }
    call.stop.forEach((s, i) => {
      const bytes = Buffer.byteLength(s);
      if (bytes === 0 || bytes > MAX_STOP_BYTES) {
        throw new InvalidArgumentError(`stop[${i}] must be 1 to ${MAX_STOP_BYTES} bytes long`);
      }
    });
  }
  return reference.adapter === undefined
    ? { model: entry }
    : { model: entry, adapter: reference.adapter };
}

function checkMessages(messages: readonly ChatTurn[], limits: GenerateLimits): void {
  if (messages.length === 0) throw new InvalidArgumentError("messages must not be empty");
  if (messages.length > limits.maxMessages) {
    throw new InvalidArgumentError(
      `at most ${limits.maxMessages} messages, got ${messages.length}`,
    );
  }
  let chars = 0;
  messages.forEach((m, i) => {
    if (!ROLES.has(m.role)) {
      throw new InvalidArgumentError(
        `messages[${i}].role must be one of ${[...ROLES].join(", ")}, got "${m.role}"`,
      );
    }
    chars += m.content.length;
  });
  if (chars > limits.maxPromptChars) {
    throw new InvalidArgumentError(`messages hold more than ${limits.maxPromptChars} characters`);
  }
}

function intIn(name: string, value: number | undefined, min: number, max: number): void {
  if (value === undefined) return;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be an integer in ${min}..${max}, got ${value}`);
  }
}

function numberIn(
  name: string,
  value: number | undefined,
  { min, max, minExclusive }: { min: number; max: number; minExclusive: boolean },
): void {
  if (value === undefined) return;
  const low = minExclusive ? value <= min : value < min;
  if (!Number.isFinite(value) || low || value > max) {
    const range = `${minExclusive ? "(" : "["}${min}, ${max}]`;
    throw new InvalidArgumentError(`${name} must be in ${range}, got ${value}`);
  }
}
