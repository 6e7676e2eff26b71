/**
 * A frame's body is longer than the agreed limit. On the receiving side the stream can no
 * longer be trusted (a hostile or corrupt length prefix would make us buffer gigabytes), so the
 * connection must be dropped; on the sending side the request is refused before it is written,
 * because the sidecar would answer it by closing the connection for every request in flight.
 */
export class FrameTooLargeError extends Error {
  override readonly name = "FrameTooLargeError";

  constructor(
    /** Body length in bytes, as announced by the prefix or as encoded. */
    readonly length: number,
    /** The limit it exceeded. */
    readonly maxFrameBytes: number,
  ) {
    super(`frame body of ${length} bytes exceeds the limit of ${maxFrameBytes} bytes`);
  }
}
