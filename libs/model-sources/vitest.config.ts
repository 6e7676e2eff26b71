import { defineConfig } from "vitest/config";

// The integration tests move the real 90 MB MiniLM weights through a local server several
// times; on two cores they run one file at a time.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
  },
});
