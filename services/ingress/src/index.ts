/** The ingress service, startable in process (tests) through `run`. */
export { run } from "./run.js";
export type { IngressOptions, RunningIngress } from "./run.js";
