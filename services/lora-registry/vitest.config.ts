import { defineConfig } from "vitest/config";

// The suites start their own nats-server and upload multi-megabyte archives; on two shared
// cores they run one file at a time.
export default defineConfig({
  test: { fileParallelism: false, testTimeout: 60_000, hookTimeout: 120_000 },
});
