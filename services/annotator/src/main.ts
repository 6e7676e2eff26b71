import {
  bootService,
  catalogFromEnv,
  envInt,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { run } from "./run.js";

const env = process.env;
const booted = bootService("annotator", env);
try {
  const catalog = await catalogFromEnv(env);
  const annotator = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    catalog,
    partMaxPaddedTokens: envInt(env, "SHOAL_PART_MAX_PADDED_TOKENS"),
    partMaxInputs: envInt(env, "SHOAL_PART_MAX_INPUTS"),
    maxQueuedPerModel: envInt(env, "SHOAL_MAX_QUEUED_PER_MODEL"),
    logger: booted.logger,
    tracer: booted.tracing.tracer,
  });
  exitOnSignal(() => annotator.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
