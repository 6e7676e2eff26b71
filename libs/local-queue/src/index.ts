/**
 * The machine-local queue: the co-located workers of one host hand each other pulled work over
 * a Unix socket instead of putting it back over the network. See README.md for the protocol.
 */
export { LocalQueueServer } from "./server.js";
export { LocalQueueClient } from "./client.js";
export type { LocalQueueClientOptions, TakeOptions } from "./client.js";
export { compileLocalQueueServerOptions } from "./options.js";
export type { CompiledLocalQueueServerOptions, LocalQueueServerOptions } from "./options.js";
export { HeldQueue } from "./held-queue.js";
export type { HeldQueueLimits } from "./held-queue.js";
export { LocalQueueError, LOCAL_QUEUE_ERROR_CODES } from "./local-queue-error.js";
export type { LocalQueueErrorCode } from "./local-queue-error.js";
export { LocalQueueUnavailableError } from "./local-queue-unavailable-error.js";
export { MAX_ITEMS_PER_REQUEST, MAX_TAKE_WAIT_MS } from "./protocol.js";
export type { LocalQueueStats } from "./protocol.js";
