import type { IncomingHttpHeaders } from "node:http";
import type { HeaderCarrier } from "./propagation.js";

/**
 * Adapts a received request's headers (Node lower-cases their names) to a read-only carrier,
 * for continuing a caller's trace.
 */
export function httpHeaderCarrier(headers: IncomingHttpHeaders): HeaderCarrier {
  return {
    get: (name) => {
      const value = headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
    set: () => undefined,
  };
}
