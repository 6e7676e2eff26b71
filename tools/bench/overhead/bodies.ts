/**
 * The request bodies the open-loop generator sends for each protocol, encoded here with the
 * project's own codecs so the generator only has to replay bytes: single-input embeddings of
 * about `tokens` tokens, each text distinct so nothing downstream could answer from a cache.
 */
import { encode } from "@msgpack/msgpack";
import { create, toBinary } from "@bufbuild/protobuf";
import { EmbedRequestSchema } from "@shoal/proto";
import { textOfTokens } from "../targets/text.js";

export const PROTOCOLS = ["rest", "grpc", "msgpack"] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** How the generator reaches ingress for a protocol. */
export interface Route {
  readonly protocol: "http" | "grpc";
  readonly path: string;
  readonly contentType: string;
  /** Connections the generator keeps open. */
  readonly conns: number;
}

export const ROUTES: Readonly<Record<Protocol, Route>> = {
  rest: { protocol: "http", path: "/v1/embeddings", contentType: "application/json", conns: 64 },
  msgpack: {
    protocol: "http",
    path: "/v1/embeddings",
    contentType: "application/msgpack",
    conns: 64,
  },
  grpc: {
    protocol: "grpc",
    path: "/shoal.inference.v1.InferenceService/Embed",
    contentType: "application/grpc",
    conns: 4,
  },
};

/** `count` bodies, each prefixed by its length as a little-endian u32 (the generator's format). */
export function encodeBodies(
  protocol: Protocol,
  model: string,
  count: number,
  tokens: number,
): Buffer {
  const chunks: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const text = textOfTokens(tokens, `overhead-${i}`);
    const body =
      protocol === "grpc"
        ? toBinary(EmbedRequestSchema, create(EmbedRequestSchema, { model, inputs: [text] }))
        : protocol === "msgpack"
          ? encode({ model, input: [text] })
          : Buffer.from(JSON.stringify({ model, input: [text] }));
    const length = Buffer.alloc(4);
    length.writeUInt32LE(body.byteLength);
    chunks.push(length, Buffer.from(body));
  }
  return Buffer.concat(chunks);
}
