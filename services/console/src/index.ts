/** The live console service, startable in process (tests) through `run`. */
export { run } from "./run.js";
export type { ConsoleOptions, RunningConsole } from "./run.js";
export type { ConsoleSnapshot } from "./snapshot.js";
