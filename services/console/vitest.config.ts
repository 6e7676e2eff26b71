import { defineConfig } from "vitest/config";

// The browser test starts a real cluster (nats-server, a model-loader, two workers with
// simulated accelerators, ingress, the console) and a headless Chromium: one file at a time.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
