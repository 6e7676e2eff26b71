/** Header names Shoal sets on NATS messages, beside W3C `traceparent`/`tracestate`. */
export const Headers = {
  /**
   * JetStream's dedupe key, so a retried publish is stored once: on a work message the
   * publishing gateway's process id and a counter.
   */
  msgId: "Nats-Msg-Id",
  /** The request a message serves; repeated when a work message carries several. */
  requestId: "Shoal-Request-Id",
  /**
   * On a work item a worker sent back after a failed attempt: how many attempts have failed.
   * Absent on a first copy. Put-backs and redeliveries do not change it.
   */
  failedAttempts: "Shoal-Failed-Attempts",
  /** On dead-lettered items: why the worker gave up. */
  deadReason: "Shoal-Dead-Reason",
  /** On dead-lettered items: attempts it had had (failed ones and the last). */
  deadDeliveries: "Shoal-Dead-Deliveries",
  /** On dead-lettered items: the work subject it came from. */
  deadSubject: "Shoal-Dead-Subject",
} as const;
