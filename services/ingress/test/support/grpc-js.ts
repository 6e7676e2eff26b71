import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { repoRoot } from "@shoal/testing";

// The InferenceService as a polyglot client sees it: a stub that @grpc/grpc-js generates at run
// time from proto/, with nothing of Shoal's own TypeScript types. Messages are plain objects with
// camelCase fields, enums as their names.

type Unary = (
  req: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  cb: grpc.requestCallback<unknown>,
) => grpc.ClientUnaryCall;

export interface InferenceStub extends grpc.Client {
  Embed: Unary;
  Score: Unary;
  Extract: Unary;
  ListModels: Unary;
  Generate(
    req: object,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
  ): grpc.ClientReadableStream<unknown>;
}

export type UnaryMethod = "Embed" | "Score" | "Extract" | "ListModels";

/**
 * @param credentials TLS credentials for an HTTPS ingress. @default cleartext
 * @param options channel options (e.g. the name the certificate is checked against).
 */
export function inferenceStub(
  baseUrl: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  options: grpc.ChannelOptions = {},
): InferenceStub {
  const definition = protoLoader.loadSync(
    join(repoRoot(), "proto", "shoal", "inference", "v1", "inference.proto"),
    { includeDirs: [join(repoRoot(), "proto")], defaults: true, enums: String },
  );
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    shoal: { inference: { v1: { InferenceService: grpc.ServiceClientConstructor } } };
  };
  return new pkg.shoal.inference.v1.InferenceService(
    baseUrl.replace("http://", ""),
    credentials,
    options,
  ) as unknown as InferenceStub;
}

/** One unary call; rejects with the grpc.ServiceError the server answered. */
export function unary<T>(
  stub: InferenceStub,
  method: UnaryMethod,
  req: object,
  options: grpc.CallOptions = {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    stub[method].call(stub, req, new grpc.Metadata(), options, (err, res) => {
      if (err !== null || res === undefined) reject(err ?? new Error("empty response"));
      else resolve(res as T);
    });
  });
}

/** Every message of a server stream, once it ends; rejects with the stream's error. */
export function collectStream<T>(call: grpc.ClientReadableStream<unknown>): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const messages: T[] = [];
    call.on("data", (m: T) => messages.push(m));
    call.on("error", reject);
    call.on("end", () => {
      resolve(messages);
    });
  });
}

/** The grpc.ServiceError a call failed with (fails the test if it succeeded). */
export async function grpcError(call: Promise<unknown>): Promise<grpc.ServiceError> {
  const outcome = await call.then(
    () => undefined,
    (e: unknown) => e as grpc.ServiceError,
  );
  if (outcome === undefined) throw new Error("the call succeeded; an error was expected");
  return outcome;
}
