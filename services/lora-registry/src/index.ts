/** The LoRA adapter registry service, startable in process (tests) through `run`. */
export { run } from "./run.js";
export type { LoraRegistryOptions, RunningLoraRegistry } from "./run.js";
export { DEFAULT_REGISTRY_OPTIONS } from "./options.js";
