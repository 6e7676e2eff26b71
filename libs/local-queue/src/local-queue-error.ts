/** Codes the local queue answers a failed request with (see the README's protocol). */
export type LocalQueueErrorCode = "bad_frame" | "frame_too_large" | "bad_request" | "shutting_down";

export const LOCAL_QUEUE_ERROR_CODES: readonly LocalQueueErrorCode[] = [
  "bad_frame",
  "frame_too_large",
  "bad_request",
  "shutting_down",
];

/** The local queue refused a request; `code` says why. */
export class LocalQueueError extends Error {
  override readonly name = "LocalQueueError";

  constructor(
    readonly code: LocalQueueErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
