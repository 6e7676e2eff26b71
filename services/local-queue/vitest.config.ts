import { defineConfig } from "vitest/config";

// The tests start the queue as a process (node with tsx), slow to boot on two shared cores.
export default defineConfig({
  test: { testTimeout: 60_000, hookTimeout: 120_000 },
});
