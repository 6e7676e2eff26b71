/**
 * Annotation: exact token counts per input, parts that fit a batch, length buckets, and the
 * publish into the work stream. Runs in the annotator service or inside ingress on one node.
 */
export { Annotator } from "./annotator.js";
export type { Annotate, AnnotatorOptions } from "./annotator.js";
export { Backlog } from "./backlog.js";
export type { BacklogOptions } from "./backlog.js";
export { RemoteAnnotator, serveAnnotations } from "./remote.js";
export type { RemoteAnnotatorOptions } from "./remote.js";
export { lengthBucket, planParts } from "./plan.js";
export type { PartLimits, Plan, PlannedPart } from "./plan.js";
export { estimatingTokenCounter, loadTokenCounter } from "./token-counter.js";
export type { TokenCounter } from "./token-counter.js";
