import type { Logger } from "@shoal/telemetry";
import type { ModelProgressEvent } from "./options.js";

/**
 * Calls the progress listener, if any. A throwing listener is logged and otherwise ignored: a
 * progress bar must not be able to fail a model download.
 */
export function reportProgress(
  listener: ((event: ModelProgressEvent) => void) | undefined,
  logger: Logger | undefined,
  event: ModelProgressEvent,
): void {
  if (listener === undefined) return;
  try {
    listener(event);
  } catch (error) {
    logger?.warn({ err: error, file: event.file }, "model progress listener threw");
  }
}
