/** The annotator service, startable in process (tests) through `run`. */
export { run } from "./run.js";
export type { AnnotatorServiceOptions, RunningAnnotator } from "./run.js";
