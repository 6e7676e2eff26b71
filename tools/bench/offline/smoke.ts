/**
 * The smallest end-to-end check of a sidecar on a device: it starts, loads the committed tiny
 * cross-encoder (tools/reference/fixtures/tiny) in f32 and f16, and scores the fixture's pairs,
 * which must match transformers' scores (f32 within 1e-4, f16 within 1e-2). Needs no model
 * weights beyond the repository's, so it can run before the real weights have arrived.
 *
 *   node --import tsx tools/bench/offline/smoke.ts --device cuda:0
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SidecarClient, toFloat32Array } from "@shoal/sidecar-client";
import { repoRoot, startSidecar } from "@shoal/testing";

const { values } = parseArgs({ options: { device: { type: "string", default: "cpu" } } });
const fixtures = join(repoRoot(), "tools", "reference", "fixtures");
const { pairs } = JSON.parse(await readFile(join(fixtures, "tiny-cross-encoder.json"), "utf8")) as {
  pairs: { query: string; document: string; score: number }[];
};

const sidecar = await startSidecar({ models: {}, args: ["--device", values.device] });
const client = await SidecarClient.connect({ socketPath: sidecar.socketPath });
let ok = true;
try {
  console.error(`[smoke] ${JSON.stringify(await client.health())}`);
  for (const [dtype, tolerance] of [
    ["f32", 1e-4],
    ["f16", 1e-2],
  ] as const) {
    await client.load(dtype, join(fixtures, "tiny", "cross-encoder"), { dtype });
    const scores = toFloat32Array(
      (
        await client.score({
          model: dtype,
          queries: pairs.map((p) => p.query),
          documents: pairs.map((p) => p.document),
        })
      ).scores,
    );
    const worst = Math.max(...pairs.map((p, i) => Math.abs((scores[i] ?? NaN) - p.score)));
    const pass = worst <= tolerance;
    ok &&= pass;
    console.error(
      `[smoke] ${values.device} ${dtype}: largest score difference ${worst.toExponential(2)} ` +
        `(tolerance ${tolerance}): ${pass ? "pass" : "FAIL"}`,
    );
  }
} finally {
  await client.close();
  await sidecar.stop();
}
process.exit(ok ? 0 : 1);
