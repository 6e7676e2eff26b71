/**
 * Generated protobuf-es code for Shoal's API (`shoal.inference.v1`) and internal messages
 * (`shoal.work.v1`). Everything else imports messages from here, never from `gen/` directly.
 */
export * from "./gen/shoal/inference/v1/inference_pb.js";
export * from "./gen/shoal/work/v1/work_pb.js";
