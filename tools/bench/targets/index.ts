/** How the load generator reaches ingress: `--target rest|grpc|msgpack`. */
import type { Send } from "@shoal/loadgen";
import { grpcSender } from "./grpc.js";
import { msgpackSender } from "./msgpack.js";
import { restSender } from "./rest.js";

export const TARGETS = ["rest", "grpc", "msgpack"] as const;
export type Target = (typeof TARGETS)[number];

/** Sends each request to the next of `baseUrls` in turn, as a client-side balancer would. */
export function sender(target: Target, baseUrls: readonly string[]): Send {
  const senders = baseUrls.map((baseUrl) => {
    switch (target) {
      case "rest":
        return restSender(baseUrl);
      case "grpc":
        return grpcSender(baseUrl);
      case "msgpack":
        return msgpackSender(baseUrl);
    }
  });
  let next = 0;
  return (request, signal) => (senders[next++ % senders.length] as Send)(request, signal);
}
