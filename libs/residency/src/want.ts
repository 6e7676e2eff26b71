import { ResidencyRecordError } from "./records.js";

/**
 * Demand that is not in the queue: ingress publishes on `shoal.want.v1.<model-key>` when it
 * refuses a no-wait request for a model with no resident copy, so the model-loaders still load
 * it (they read demand from the queue, where that request never went).
 */
export const WANT_PREFIX = "shoal.want.v1";

const TOKEN = /^[A-Za-z0-9_-]+$/;

export function wantSubject(model: string): string {
  if (!TOKEN.test(model)) throw new ResidencyRecordError(`"${model}" is not a valid model key`);
  return `${WANT_PREFIX}.${model}`;
}

/** The model key a want subject names, or undefined for any other subject. */
export function modelOfWant(subject: string): string | undefined {
  const key = subject.startsWith(`${WANT_PREFIX}.`) ? subject.slice(WANT_PREFIX.length + 1) : "";
  return TOKEN.test(key) ? key : undefined;
}
