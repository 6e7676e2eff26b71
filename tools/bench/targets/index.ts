/** How the load generator reaches ingress: `--target rest|grpc|msgpack`. */
import type { Send } from "@shoal/loadgen";
import { grpcSender } from "./grpc.js";
import { msgpackSender } from "./msgpack.js";
import { restSender } from "./rest.js";

export const TARGETS = ["rest", "grpc", "msgpack"] as const;
export type Target = (typeof TARGETS)[number];

export function sender(target: Target, baseUrl: string): Send {
  switch (target) {
    case "rest":
      return restSender(baseUrl);
    case "grpc":
      return grpcSender(baseUrl);
    case "msgpack":
      return msgpackSender(baseUrl);
  }
}
