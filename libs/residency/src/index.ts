/**
 * Model residency: the placement and eviction policy (pure, deterministic, clock injected),
 * the records the model-loader publishes in the residency KV bucket, and the control protocol
 * between the model-loader and workers.
 */
export type { CompiledResidencyPolicyOptions, ResidencyPolicyOptions } from "./options.js";
export { compileResidencyPolicyOptions, DEFAULT_RESIDENCY_POLICY_OPTIONS } from "./options.js";
export type {
  ModelDemand,
  Replica,
  ReplicaState,
  ResidencySnapshot,
  WorkerMemory,
} from "./snapshot.js";
export { demand, keepValue, loadNeed, recency } from "./value.js";
export type { LoadReason, ResidencyAction } from "./plan.js";
export { planResidency, usableBytes } from "./plan.js";
export type { ShareModel } from "./shares.js";
export { memoryShares, Recommendations } from "./shares.js";
export type { LoadFailureKind, LoadVerdict } from "./load-outcome.js";
export { isOutOfMemoryMessage, LoadFailures } from "./load-outcome.js";
export type { ChurnReport } from "./churn.js";
export { ChurnCounter } from "./churn.js";
export type { ModelRecord, ModelState, ReplicaRecord } from "./records.js";
export {
  decodeModel,
  decodeReplica,
  encodeModel,
  encodeReplica,
  modelKey,
  replicaKey,
  replicaKeyFilter,
  RESIDENCY_BUCKET,
  ResidencyRecordError,
} from "./records.js";
export type {
  ControlErrorCode,
  ControlReply,
  ControlRequest,
  Heartbeat,
  HeartbeatModel,
} from "./control.js";
export {
  CONTROL_PREFIX,
  controlSubject,
  decodeControlReply,
  decodeControlRequest,
  decodeHeartbeat,
  encodeControl,
  HEARTBEAT_PREFIX,
  heartbeatSubject,
} from "./control.js";
export type { Availability } from "./view.js";
export { ResidencyView } from "./view.js";
export { modelOfWant, WANT_PREFIX, wantSubject } from "./want.js";
