/**
 * A real part a test needs (a binary, model weights) is not where it should be.
 *
 * Tests fail with this instead of skipping: a suite that quietly skips its integration tests on
 * a machine without the parts reports green while testing nothing.
 */
export class MissingPrerequisiteError extends Error {
  override readonly name = "MissingPrerequisiteError";

  constructor(
    /** What is missing, e.g. `"nats-server binary"`. */
    readonly what: string,
    /** Where it was looked for. */
    readonly path: string,
    /** The environment variable that overrides `path`. */
    readonly envVar: string,
    detail?: string,
  ) {
    super(
      `${what} not found at ${path}${detail === undefined ? "" : ` (${detail})`}. ` +
        `Run \`bash tools/setup/bootstrap.sh\` from the repository root, or set ${envVar}.`,
    );
  }
}
