/** The bench's top-down router service, startable in process (tests) through `run`. */
export { parsePolicy, parseWorkers, run } from "./run.js";
export type { RouterServiceOptions, RunningRouter } from "./run.js";
