import { defineConfig } from "vitest/config";

// The integration test starts a real cluster (nats-server, worker with its sidecar, ingress).
export default defineConfig({
  test: { fileParallelism: false, testTimeout: 60_000, hookTimeout: 180_000 },
});
