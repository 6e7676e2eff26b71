/** The machine-local queue service, startable in process (tests) through `run`. */
export { defaultLocalQueueSocket, run } from "./run.js";
export type { LocalQueueServiceOptions, RunningLocalQueue } from "./run.js";
