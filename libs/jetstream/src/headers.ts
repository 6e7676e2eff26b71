/** Header names Shoal sets on NATS messages, beside W3C `traceparent`/`tracestate`. */
export const Headers = {
  /** JetStream's dedupe key: `<request-id>:<part>`, so a retried publish is stored once. */
  msgId: "Nats-Msg-Id",
  requestId: "Shoal-Request-Id",
  /** On dead-lettered items: why the worker gave up. */
  deadReason: "Shoal-Dead-Reason",
  /** On dead-lettered items: deliveries it had had. */
  deadDeliveries: "Shoal-Dead-Deliveries",
  /** On dead-lettered items: the work subject it came from. */
  deadSubject: "Shoal-Dead-Subject",
} as const;
