import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ModelEntry } from "@shoal/config";
import type { ErrorCode, WorkItemSchema, WorkRequest } from "@shoal/proto";
import type { PartLimits } from "./plan.js";
import type { ShapeEstimate } from "./shape-estimate.js";

/** A request's task, by case. */
export type RequestTask = WorkRequest["task"];
export type TaskCase = NonNullable<RequestTask["case"]>;
export type TaskOf<C extends TaskCase> = Extract<RequestTask, { case: C }>["value"];

/** A queued part's task: its slice of the request's. */
export type ItemTask = MessageInitShape<typeof WorkItemSchema>["task"];

/** One part of a request as it is queued: its slice of the task and its estimated cost. */
export interface QueuedPart {
  readonly task: ItemTask;
  readonly firstInput: number;
  /** Longest input of the part in tokens (estimated, after truncation): its length bucket. */
  readonly maxInputTokens: number;
  /** The part's tokens (estimated): the cost a worker budgets a batch with. */
  readonly totalTokens: number;
}

/** How a family's request is queued, or why it is refused before it is. */
export type FamilyPlan =
  | { readonly parts: readonly QueuedPart[]; readonly estimatedTokens: number }
  | { readonly error: { readonly code: ErrorCode; readonly message: string } };

/** What a family's planner may use. */
export interface PlanContext {
  readonly model: ModelEntry;
  /** The model's calibrated shape estimate (no tokenizer on this path). */
  readonly estimate: ShapeEstimate;
  readonly limits: PartLimits;
  /**
   * The size of the model's vocabulary, read on first use, or undefined while its files are
   * not on this machine: only token-id inputs need it, to check their ids.
   */
  readonly vocabSize: () => Promise<number | undefined>;
}

/**
 * One family's annotation: how its task is cut into queued parts. The annotator around it
 * (model lookup, backlog, publishing, errors) knows no family, so a new one is one new file.
 */
export interface AnnotatedFamily<C extends TaskCase = TaskCase> {
  readonly task: C;
  plan(task: TaskOf<C>, ctx: PlanContext): FamilyPlan | Promise<FamilyPlan>;
}
