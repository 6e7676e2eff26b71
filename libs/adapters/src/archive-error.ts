/** An upload that is not a well-formed, acceptable tar archive; the message says why. */
export class InvalidArchiveError extends Error {
  override readonly name: string = "InvalidArchiveError";
}

/**
 * An archive over a size limit: a file, all files together, or the whole archive once
 * decompressed (which is how a gzip bomb shows). Kept apart so a service can answer 413.
 */
export class ArchiveTooLargeError extends InvalidArchiveError {
  override readonly name: string = "ArchiveTooLargeError";
}
