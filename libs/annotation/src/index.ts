/**
 * Annotation, the gateway's annotate-and-queue stage: token estimates from each input's shape
 * (calibrated by the sidecar's exact counts), parts that fit a batch and a NATS message,
 * length buckets, and the publish into the work stream. One file per family under
 * `families/`; `annotator.ts` knows none of them.
 */
export { Annotator } from "./annotator.js";
export type { Annotate, AnnotatorOptions } from "./annotator.js";
export { Backlog } from "./backlog.js";
export type { BacklogOptions } from "./backlog.js";
export { lengthBucket, planParts } from "./plan.js";
export type { PartLimits, Plan, PlannedPart } from "./plan.js";
export { ShapeEstimate, textShape } from "./shape-estimate.js";
export { readVocabSize } from "./vocab.js";
