import type { HeaderCarrier } from "./propagation.js";

/** A message that carries W3C trace context as two string fields (empty when unset). */
export interface TraceFields {
  traceparent: string;
  tracestate: string;
}

/**
 * Adapts a message's trace-context fields to a carrier: for context that travels per item
 * inside a message that may carry several requests, where headers would be per message.
 */
export function traceFieldsCarrier(fields: TraceFields): HeaderCarrier {
  return {
    get: (name) => {
      const value =
        name === "traceparent"
          ? fields.traceparent
          : name === "tracestate"
            ? fields.tracestate
            : "";
      return value === "" ? undefined : value;
    },
    set: (name, value) => {
      if (name === "traceparent") fields.traceparent = value;
      else if (name === "tracestate") fields.tracestate = value;
    },
  };
}
