import type { MsgHdrs } from "@nats-io/transport-node";
import type { HeaderCarrier } from "./propagation.js";

/** Adapts NATS message headers (which may be absent on a received message) to a carrier. */
export function natsHeaderCarrier(headers: MsgHdrs | undefined): HeaderCarrier {
  return {
    get: (name) => {
      const value = headers?.get(name);
      return value === undefined || value === "" ? undefined : value;
    },
    set: (name, value) => {
      headers?.set(name, value);
    },
  };
}
