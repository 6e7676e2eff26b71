/** A workload file that cannot be run, with the path of the offending field. */
export class WorkloadError extends Error {
  override readonly name = "WorkloadError";
}
