/** The blob offloader service, startable in process (tests) through `run`. */
export { run } from "./run.js";
export type { BlobOffloaderOptions, RunningBlobOffloader } from "./run.js";
