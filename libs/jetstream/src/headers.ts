/** Header names Shoal sets on NATS messages, beside W3C `traceparent`/`tracestate`. */
export const Headers = {
  /** JetStream's dedupe key: `<request-id>:<part>`, so a retried publish is stored once. */
  msgId: "Nats-Msg-Id",
  requestId: "Shoal-Request-Id",
} as const;
