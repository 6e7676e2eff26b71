import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Priority, WorkRequestSchema } from "@shoal/proto";
import type { Principal } from "@shoal/tenants";
import type { Assembled } from "./pending.js";

/** A task as the work request carries it (`embed`, `score`, `classify`, `extract`, …). */
export type WorkTask = MessageInitShape<typeof WorkRequestSchema>["task"];

/** What every family's call sets beside its task. */
export interface TaskCall {
  readonly priority?: Priority;
  /** Time the client allows, from its own deadline; clamped to `maxTimeoutMs`. */
  readonly timeoutMs?: number;
  /** Refuse at once, with a retry hint, when no copy of the model is resident. */
  readonly noWait?: boolean;
  /** Whom the call acts for: its API key's principal; none on an open cluster. */
  readonly caller?: Principal | undefined;
}

/** A submitted request, answered. */
export interface Submitted {
  readonly requestId: string;
  readonly assembled: Assembled;
  /** When it was queued (`performance.now()` ms): before it, validation and annotation. */
  readonly queuedAt: number;
}
