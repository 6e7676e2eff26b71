/** The worker service, startable in process (tests) through `run`. */
export { run } from "./run.js";
export type { RunningWorker, WorkerOptions, WorkerResidencyOptions } from "./run.js";
