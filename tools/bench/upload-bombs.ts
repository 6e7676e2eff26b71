/**
 * What four concurrent gzip bombs leave the adapter registry holding: one registry process
 * (open, default limits) against its own nats-server, four uploads at once of an archive of
 * 75 files of 4 MiB of zeros each (300 MiB, each file under the per-file limit) gzipped to
 * about 300 KiB, and the process's resident memory after the refusals and 5 s later.
 * Prints JSON.
 *
 *   node --import tsx tools/bench/upload-bombs.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  freePort,
  smollm2CatalogDocument,
  startNatsServer,
  startService,
  tarHeader,
  tempDir,
} from "@shoal/testing";

const residentMiB = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

const nats = await startNatsServer();
const dir = await tempDir("upload-bombs");
writeFileSync(join(dir, "catalog.json"), JSON.stringify(smollm2CatalogDocument()));
const port = await freePort();
const registry = await startService("lora-registry", {
  env: {
    NATS_URL: nats.url,
    SHOAL_CATALOG: join(dir, "catalog.json"),
    SHOAL_BUNDLE: "none",
    SHOAL_REGISTRY_PORT: String(port),
  },
  readyMessage: "lora registry listening",
});
try {
  const file = 4 * 1024 * 1024;
  const parts: Buffer[] = [];
  for (let i = 0; i < 75; i++)
    parts.push(tarHeader({ name: `zeros-${i}`, size: file }), Buffer.alloc(file));
  const bomb = gzipSync(Buffer.concat(parts));
  const before = residentMiB(registry.pid);
  const answers = await Promise.all(
    [1, 2, 3, 4].map(async (i) => {
      const answer = await fetch(
        `http://127.0.0.1:${port}/v1/adapters/smollm2-135m-instruct/bomb-${i}`,
        { method: "PUT", body: bomb },
      );
      return { status: answer.status, body: await answer.text() };
    }),
  );
  const after = residentMiB(registry.pid);
  await new Promise((resolve) => setTimeout(resolve, 5000));
  console.log(
    JSON.stringify(
      {
        bomb_bytes: bomb.length,
        inflates_to_bytes: 75 * file,
        answers,
        resident_mib: { before, after_refusals: after, five_s_later: residentMiB(registry.pid) },
      },
      null,
      2,
    ),
  );
} finally {
  await registry.stop();
  await nats.stop();
}
