/** Process lifecycle for service `main`s: environment settings, boot and signal handling. */
export { bootService, exitOnSignal, failStart } from "./boot.js";
export type { Booted } from "./boot.js";
export { envInt, envList, envOptional, envPercent, envRequired, envString } from "./env.js";
export type { Env } from "./env.js";
export { bundleFromEnv, catalogFromEnv } from "./catalog.js";
export { superviseReplicas } from "./replicas.js";
