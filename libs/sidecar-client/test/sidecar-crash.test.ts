import { minilmDir, startSidecar } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { SidecarClient, SidecarUnavailableError } from "../src/index.js";

describe("sidecar killed mid-request", { timeout: 180_000 }, () => {
  it("fails every pending call promptly with SidecarUnavailableError", async () => {
    const sidecar = await startSidecar({ models: { minilm: minilmDir() } });
    try {
      const client = await SidecarClient.connect({ socketPath: sidecar.socketPath });
      // Long batches keep the model thread busy for well over the time the kill takes.
      const batch = Array.from({ length: 64 }, (_, i) =>
        Array.from({ length: 200 }, (_, j) => `token${(i * 31 + j) % 997}`).join(" "),
      );
      const calls = Array.from({ length: 4 }, () =>
        client.embed({ model: "minilm", inputs: batch }).then(
          () => "resolved",
          (e: unknown) => e,
        ),
      );
      const health = client.health();
      await health;
      expect(client.inFlight).toBe(4);

      const killedAt = Date.now();
      sidecar.kill("SIGKILL");
      const outcomes = await Promise.all(calls);
      expect(Date.now() - killedAt).toBeLessThan(2000);
      for (const outcome of outcomes) expect(outcome).toBeInstanceOf(SidecarUnavailableError);
      await expect(client.closed()).resolves.toBeInstanceOf(SidecarUnavailableError);
      await expect(client.stats()).rejects.toBeInstanceOf(SidecarUnavailableError);
      await expect(sidecar.exited).resolves.toMatchObject({ signal: "SIGKILL" });
    } finally {
      await sidecar.stop();
    }
  });
});
