import { defineConfig } from "vitest/config";

// Each test file starts a real cluster (nats-server, a worker with its sidecar and the model);
// on two cores they run one at a time.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
