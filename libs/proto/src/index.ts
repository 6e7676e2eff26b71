/**
 * Generated protobuf-es code for Shoal's API (`shoal.inference.v1`), internal messages
 * (`shoal.work.v1`), and the standard gRPC health and reflection protocols ingress serves beside
 * them. Everything else imports messages from here, never from `gen/` directly.
 */
export * from "./gen/shoal/inference/v1/inference_pb.js";
export * from "./gen/shoal/work/v1/work_pb.js";
export * from "./gen/grpc/health/v1/health_pb.js";
// The two reflection versions declare the same names, so each gets its own namespace.
export * as reflectionV1 from "./gen/grpc/reflection/v1/reflection_pb.js";
export * as reflectionV1alpha from "./gen/grpc/reflection/v1alpha/reflection_pb.js";
