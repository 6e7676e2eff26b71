export type { RoutingPolicy } from "./policy.js";
export { Chooser, ROUTING_POLICIES, VIEW_BLIND_POLICIES } from "./policy.js";
export { WorkerView } from "./worker-view.js";
export type { RouterOptions } from "./router.js";
export { Router } from "./router.js";
export type {
  AutoscaleAction,
  AutoscaleModel,
  AutoscalePolicyOptions,
  AutoscaleReplica,
  AutoscaleWorker,
  ReplicaPhase,
} from "./autoscale-policy.js";
export { planAutoscale } from "./autoscale-policy.js";
export type { AutoscalerOptions, Membership } from "./autoscaler.js";
export { Autoscaler } from "./autoscaler.js";
