export { apportion } from "./apportion.js";
export type { Arrivals, RatePiece } from "./arrivals.js";
export { renewalTimes } from "./arrivals.js";
export type { AcceleratorClass, FleetSpec } from "./fleet.js";
export { MAX_ACCELERATORS } from "./fleet.js";
export type { Drift, Popularity } from "./popularity.js";
export { epochAt, weightsIn } from "./popularity.js";
export type { Distribution } from "./distribution.js";
export { compileDistribution, mean, sample } from "./distribution.js";
export type { Knee, KneeMiss, KneeOptions } from "./knee.js";
export { findKnee, kneeMiss } from "./knee.js";
export type { PlannedRequest } from "./plan.js";
export { planStep } from "./plan.js";
export { cumulative, Random, zipfWeights } from "./random.js";
export type { StepResult } from "./step-result.js";
export { percentiles, quantile } from "./step-result.js";
export type { ChartOptions, Series } from "./svg-chart.js";
export { escapeXml, lineChart, ticks } from "./svg-chart.js";
export type { LoadSchedule, MixEntry, RequestFunction, Workload } from "./workload.js";
export { compileWorkload } from "./workload.js";
export { WorkloadError } from "./workload-error.js";
export type { RunStepOptions, SentAnswer, Send, StepProgress } from "./run-step.js";
export { runStep } from "./run-step.js";
export { parseServerTiming } from "./server-timing.js";
export type {
  TuneOptions,
  TuningOutcome,
  TuningParameter,
  TuningScore,
  TuningTrial,
} from "./tune.js";
export { beats, tune } from "./tune.js";
