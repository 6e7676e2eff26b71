/**
 * Shoal's JetStream topology: subjects, the work stream and per-model consumers, and the pull
 * primitive workers build their batches from.
 */
export {
  DEAD_PREFIX,
  ROUTED_PREFIX,
  WORK_PREFIX,
  deadLetterSubject,
  modelWorkFilter,
  parseWorkSubject,
  retrySubject,
  replySubject,
  routedSubject,
  routedWorkFilter,
  workSubject,
} from "./subjects.js";
export { Headers } from "./headers.js";
export {
  DEAD_LETTER_STREAM,
  DEFAULT_ACK_WAIT_MS,
  ROUTED_STREAM,
  WORK_STREAM,
  ensureDeadLetterStream,
  ensureModelConsumer,
  ensureRoutedConsumer,
  ensureRouterConsumer,
  ensureRoutedStream,
  ensureWorkStream,
  modelConsumerName,
} from "./topology.js";
export type {
  DeadLetterStreamOptions,
  WorkConsumerOptions,
  WorkStreamOptions,
} from "./topology.js";
export {
  connectNats,
  drainOrClose,
  natsAuthFromEnv,
  userInboxPrefix,
  type NatsAuth,
} from "./connection.js";
export { pull } from "./pull.js";
export {
  readModelConsumers,
  readOldestStored,
  readSubjectCounts,
  type QueueReadError,
} from "./queue-state.js";
export { reportNatsReadiness, type ReadinessSink } from "./readiness.js";
export {
  NoStreamError,
  PublishRefusedError,
  PublishTimeoutError,
  StreamPublisher,
} from "./stream-publisher.js";
export type { PubAck, StreamPublisherOptions } from "./stream-publisher.js";
export type { PullRequest } from "./pull.js";
export { WorkMessage, parseAckSubject } from "./work-message.js";
export type { WorkMessageParts } from "./work-message.js";
