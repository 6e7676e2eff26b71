/**
 * Writes a copy of a safetensors file with its F32 tensors stored as F16 (pack.sh uses it to
 * halve MiniLM's weights for the trip to a GPU host).
 *
 *   node --import tsx tools/bench/offline/half-weights.ts <source.safetensors> <target.safetensors>
 */
import { writeHalfPrecision } from "@shoal/model-sources";

const [source, target] = process.argv.slice(2);
if (source === undefined || target === undefined) {
  console.error("usage: half-weights.ts <source.safetensors> <target.safetensors>");
  process.exit(2);
}
await writeHalfPrecision(source, target);
