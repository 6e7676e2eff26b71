/** The model-loader service, startable in process (tests) through `run`. */
export { run } from "./run.js";
export type { ModelLoaderOptions, RunningModelLoader } from "./run.js";
export type { ModelStatus } from "./model-loader.js";
