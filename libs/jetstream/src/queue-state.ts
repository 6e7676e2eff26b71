import type { ConsumerInfo, JetStreamManager, MsgRequest } from "@nats-io/jetstream";
import { modelWorkFilter } from "./subjects.js";
import { modelConsumerName } from "./topology.js";

/** Called for a model whose figure could not be read; the read goes on without it. */
export type QueueReadError = (modelKey: string, err: unknown) => void;

/**
 * Each model's work consumer, by model key. Models no worker has served yet have none, and a
 * server that is away answers nothing: both are left out, each reported to `onError`.
 */
export async function readModelConsumers(
  jsm: JetStreamManager,
  stream: string,
  modelKeys: readonly string[],
  onError: QueueReadError,
): Promise<Map<string, ConsumerInfo>> {
  const out = new Map<string, ConsumerInfo>();
  for (const key of modelKeys) {
    try {
      out.set(key, await jsm.consumers.info(stream, modelConsumerName(key)));
    } catch (err) {
      onError(key, err);
    }
  }
  return out;
}

/**
 * When each model's oldest unfinished work message was stored, Unix ms. The work stream keeps
 * a message until it is acknowledged, so the first one on a model's subjects is the oldest
 * not yet done; a model with none is absent.
 */
export async function readOldestStored(
  jsm: JetStreamManager,
  stream: string,
  modelKeys: readonly string[],
  onError: QueueReadError,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const key of modelKeys) {
    try {
      // The server's message-get takes `next_by_subj` (the first message on or after `seq` on
      // matching subjects); the client's type names only the other two forms.
      const query = { seq: 1, next_by_subj: modelWorkFilter(key) } as MsgRequest;
      const first = await jsm.streams.getMessage(stream, query);
      if (first !== null) out.set(key, first.time.getTime());
    } catch (err) {
      onError(key, err);
    }
  }
  return out;
}

/**
 * Messages stored per subject of `stream` matching `filter`: for the work stream, the
 * unfinished messages of every model and length bucket; for the dead letters, every model's.
 * One request to the server whatever the number of subjects.
 */
export async function readSubjectCounts(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
): Promise<Map<string, number>> {
  const info = await jsm.streams.info(stream, { subjects_filter: filter });
  return new Map(Object.entries(info.state.subjects ?? {}));
}
