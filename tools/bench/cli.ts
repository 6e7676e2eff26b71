/**
 * Command-line parsing for the bench entry points (`npm run bench`, `npm run autotune`): a
 * mistyped or unknown option prints what was wrong and the usage line and exits 2, as the
 * other argument checks do, instead of a Node stack trace.
 */
export function parseOrExit<T>(parse: () => T, usage: string): T {
  try {
    return parse();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS")) {
      console.error(`${(err as Error).message}\n${usage}`);
      process.exit(2);
    }
    throw err;
  }
}
