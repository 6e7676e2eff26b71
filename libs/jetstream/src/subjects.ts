/**
 * Subject layout. Work is addressed by model and length bucket so a worker can pull a batch of
 * similar lengths (less padding); answers go to the ingress replica holding the client.
 *
 *   shoal.work.v1.<model-key>.b<bucket>   JetStream, stream SHOAL_WORK
 *   shoal.reply.v1.<ingress-id>           core NATS, one subscription per ingress process
 *   shoal.dead.v1.<model-key>             JetStream, stream SHOAL_DEAD: items workers gave up on
 *   shoal.routed.v1.<worker>.<model-key>.b<bucket>
 *                                         JetStream, stream SHOAL_ROUTED: only in the bench's
 *                                         top-down router mode, one worker's private queue
 */
export const WORK_PREFIX = "shoal.work.v1";
export const DEAD_PREFIX = "shoal.dead.v1";
export const ROUTED_PREFIX = "shoal.routed.v1";

const TOKEN = /^[A-Za-z0-9_-]+$/;

/** Subject of a work item for `modelKey` whose longest input falls in `bucket` (tokens). */
export function workSubject(modelKey: string, bucket: number): string {
  return `${WORK_PREFIX}.${checkToken(modelKey)}.b${bucket}`;
}

/** Filter that matches all of a model's work, whatever the bucket. */
export function modelWorkFilter(modelKey: string): string {
  return `${WORK_PREFIX}.${checkToken(modelKey)}.>`;
}

/** Where a router puts an item of `modelKey` in `bucket` that it assigned to `worker`. */
export function routedSubject(worker: string, modelKey: string, bucket: number): string {
  return `${ROUTED_PREFIX}.${checkToken(worker)}.${checkToken(modelKey)}.b${bucket}`;
}

/** Filter that matches the items of `modelKey` routed to `worker`. */
export function routedWorkFilter(worker: string, modelKey: string): string {
  return `${ROUTED_PREFIX}.${checkToken(worker)}.${checkToken(modelKey)}.>`;
}

/**
 * Where a worker puts back an item for another attempt: its work subject with a `retry` token
 * after it. The model's consumer takes both; only workers may publish retries and only ingress
 * new work, so a worker's NATS user cannot queue work of its own (docs/security.md).
 */
export function retrySubject(subject: string): string {
  return subject.endsWith(`.${RETRY_TOKEN}`) ? subject : `${subject}.${RETRY_TOKEN}`;
}

const RETRY_TOKEN = "retry";

/** A work subject's (or its retry's) model key and bucket, or undefined for any other. */
export function parseWorkSubject(
  subject: string,
): { modelKey: string; bucket: number } | undefined {
  const m = /^shoal\.work\.v1\.([A-Za-z0-9_-]+)\.b(\d+)(?:\.retry)?$/.exec(subject);
  return m === null ? undefined : { modelKey: m[1] as string, bucket: Number(m[2]) };
}

/** Where a model's dead-lettered items go. */
export function deadLetterSubject(modelKey: string): string {
  return `${DEAD_PREFIX}.${checkToken(modelKey)}`;
}

/** Where one ingress process receives the answers to the requests it holds. */
export function replySubject(ingressId: string): string {
  return `shoal.reply.v1.${checkToken(ingressId)}`;
}

function checkToken(token: string): string {
  if (!TOKEN.test(token)) throw new Error(`"${token}" is not a valid NATS subject token`);
  return token;
}
