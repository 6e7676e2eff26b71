import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { paxRecord, tarArchive, tarHeader, tempDir, type TarEntrySpec } from "@shoal/testing";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { ArchiveTooLargeError, InvalidArchiveError } from "./archive-error.js";
import { readTar, type TarLimits } from "./tar.js";

let root: string;
const config = Buffer.from('{"peft_type":"LORA"}');
const weights = randomBytes(5000);

beforeAll(async () => {
  root = await tempDir("tar");
  const adapter = join(root, "my-adapter");
  await mkdir(join(adapter, "extra"), { recursive: true });
  await writeFile(join(adapter, "adapter_config.json"), config);
  await writeFile(join(adapter, "adapter_model.safetensors"), weights);
  await writeFile(join(adapter, "extra", "README.md"), "# notes");
});

/** Runs GNU tar, the archiver most uploads come from. */
function gnuTar(args: readonly string[]): Buffer {
  return execFileSync("tar", args, { maxBuffer: 64 * 1024 * 1024 });
}

/** The bytes as a stream of `size`-byte chunks, as a socket would deliver them. */
function chunks(bytes: Buffer, size = 4096): AsyncIterable<Buffer> {
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return Readable.from(parts);
}

async function read(bytes: Buffer, limits?: TarLimits): Promise<Map<string, string>> {
  const files = await readTar(chunks(bytes), limits);
  return new Map([...files].map(([name, data]) => [name, data.toString("base64")]));
}

async function refusal(bytes: Buffer, limits?: TarLimits): Promise<Error> {
  const error = await readTar(chunks(bytes), limits).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidArchiveError);
  return error as Error;
}

const expected = new Map([
  ["adapter_config.json", config.toString("base64")],
  ["adapter_model.safetensors", weights.toString("base64")],
  ["extra/README.md", Buffer.from("# notes").toString("base64")],
]);

const file = (name: string, data: string | Buffer = "x"): TarEntrySpec => ({ name, data });

describe("readTar on archives GNU tar writes", () => {
  it("reads a directory's contents archived from inside it (./ names)", async () => {
    expect(await read(gnuTar(["-C", join(root, "my-adapter"), "-cf", "-", "."]))).toEqual(expected);
  });

  it("strips the one leading directory of an archived folder", async () => {
    expect(await read(gnuTar(["-C", root, "-cf", "-", "my-adapter"]))).toEqual(expected);
  });

  it("reads gzip-compressed archives", async () => {
    expect(await read(gnuTar(["-C", root, "-czf", "-", "my-adapter"]))).toEqual(expected);
  });

  it.each(["gnu", "pax"])("reads names over 100 bytes in %s format", async (format) => {
    const dir = join(root, `long-${format}`);
    const deep = join(dir, "d".repeat(60), "e".repeat(60));
    await mkdir(deep, { recursive: true });
    await writeFile(join(deep, "adapter_config.json"), config);
    await writeFile(join(dir, "top.txt"), "");
    const files = await read(gnuTar([`--format=${format}`, "-C", dir, "-cf", "-", "."]));
    expect([...files.keys()].sort()).toEqual([
      `${"d".repeat(60)}/${"e".repeat(60)}/adapter_config.json`,
      "top.txt",
    ]);
  });

  it("refuses a symbolic link GNU tar archived", async () => {
    const dir = join(root, "with-link");
    await mkdir(dir, { recursive: true });
    await symlink("/etc/passwd", join(dir, "adapter_config.json"));
    const error = await refusal(gnuTar(["-C", dir, "-cf", "-", "."]));
    expect(error.message).toBe("./adapter_config.json is a symbolic link; links are not accepted");
    await rm(dir, { recursive: true });
  });
});

describe("readTar on hand-built archives", () => {
  it("returns top-level files as they are, ignoring directories", async () => {
    const files = await read(
      tarArchive([{ name: "./", type: "5" }, file("./a.json", "{}"), file("b", "")]),
    );
    expect([...files.keys()]).toEqual(["a.json", "b"]);
  });

  it("keeps paths when files do not share one leading directory", async () => {
    const files = await read(tarArchive([file("x/a"), file("y/b")]));
    expect([...files.keys()]).toEqual(["x/a", "y/b"]);
  });

  it("honours a pax path and size, and reads past global headers", async () => {
    const pax = paxRecord("path", "dir/adapter_config.json") + paxRecord("size", "2");
    const xattr = Buffer.concat([
      Buffer.from("30 SCHILY.xattr.user.bin="),
      Buffer.from([0xff, 0xfe, 0x00, 0x01]),
      Buffer.from("\n"),
    ]);
    const files = await read(
      Buffer.concat([
        tarArchive(
          [
            { name: "pax_global_header", type: "g", data: paxRecord("comment", "hi") },
            { name: "PaxHeaders/x", type: "x", data: Buffer.concat([Buffer.from(pax), xattr]) },
          ],
          { end: false },
        ),
        tarHeader({ name: "short", size: 99 }),
        Buffer.from("{}".padEnd(512, "\0")),
        Buffer.alloc(1024),
      ]),
    );
    expect(files).toEqual(new Map([["adapter_config.json", Buffer.from("{}").toString("base64")]]));
  });

  it("reads an archive whatever its chunking", async () => {
    const archive = gnuTar(["-C", root, "-czf", "-", "my-adapter"]);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3000 }), async (size) => {
        const files = await readTar(chunks(archive, size));
        expect(files.get("adapter_model.safetensors")?.equals(weights)).toBe(true);
      }),
      { numRuns: 25 },
    );
  });

  it("reads data after the end-of-archive block to the end, and ignores it", async () => {
    let pulled = 0;
    const archive = Buffer.concat([tarArchive([file("a")]), Buffer.from("trailing bytes")]);
    async function* counted(): AsyncGenerator<Buffer> {
      for await (const chunk of chunks(archive, 100)) {
        pulled += chunk.length;
        yield chunk;
      }
    }
    expect([...(await readTar(counted())).keys()]).toEqual(["a"]);
    expect(pulled).toBe(archive.length);
  });

  it.each<[string, Buffer, string | RegExp]>([
    ["an empty upload", Buffer.alloc(0), "archive is empty"],
    ["a few bytes", Buffer.from('{"r":8}'), "not a tar archive (shorter than one 512-byte header)"],
    ["JSON", Buffer.from(JSON.stringify({ peft_type: "LORA" }).padEnd(600)), /^not a tar archive/],
    ["random bytes", Buffer.concat([Buffer.from("R"), randomBytes(4095)]), /^not a tar archive/],
    [
      "a corrupt second header",
      tarArchive([file("a"), { ...file("b"), badChecksum: true }]),
      "header at byte 1024 has a bad checksum (corrupt archive)",
    ],
    [
      "an archive cut inside a file",
      tarArchive([file("a", "x".repeat(2000))]).subarray(0, 1500),
      "archive ends unexpectedly after 1500 bytes (truncated?)",
    ],
    [
      "an archive without its end-of-archive block",
      tarArchive([file("a")], { end: false }),
      "archive ends without its end-of-archive block (truncated?)",
    ],
    [
      "a size field claiming more than follows",
      tarArchive([{ ...file("a", "abc"), size: 10_000 }]),
      /^archive ends unexpectedly/,
    ],
    [
      "a symbolic link",
      tarArchive([{ name: "adapter_config.json", type: "2", linkName: "/etc/passwd" }]),
      "adapter_config.json is a symbolic link; links are not accepted",
    ],
    [
      "a hard link",
      tarArchive([file("a"), { name: "b", type: "1", linkName: "a" }]),
      "b is a hard link; links are not accepted",
    ],
    ["a character device", tarArchive([{ name: "tty", type: "3" }]), "tty is a device"],
    ["a block device", tarArchive([{ name: "sda", type: "4" }]), "sda is a device"],
    ["a FIFO", tarArchive([{ name: "pipe", type: "6" }]), "pipe is a fifo"],
    ["a sparse file", tarArchive([{ name: "s", type: "S" }]), 's has tar entry type "S"'],
    ["an absolute name", tarArchive([file("/etc/cron.d/x")]), "absolute name: /etc/cron.d/x"],
    ["a .. component", tarArchive([file("a/../../b")]), '".." component: a/../../b'],
    ["a .. directory", tarArchive([{ name: "../", type: "5" }]), '".." component'],
    [
      "a .. in a pax path",
      tarArchive([{ name: "h", type: "x", data: paxRecord("path", "../x") }, file("x")]),
      '".." component: ../x',
    ],
    [
      "a .. in a GNU long name",
      tarArchive([{ name: "././@LongLink", type: "L", data: "../../x\0" }, file("x")]),
      '".." component: ../../x',
    ],
    ["a duplicate name", tarArchive([file("./a"), file("a")]), "archive holds a twice"],
    ["a file with an empty name", tarArchive([file("./")]), "has an empty name"],
    [
      "a malformed pax header",
      tarArchive([{ name: "h", type: "x", data: "99 path=x\n" }, file("x")]),
      "pax header at byte 0 is malformed",
    ],
    [
      "an oversized pax header",
      tarArchive([{ name: "h", type: "x", data: "x".repeat(70_000) }]),
      "extended header at byte 0 is over 65536 bytes",
    ],
    [
      "gzip with an unknown compression method",
      Buffer.concat([Buffer.from([0x1f, 0x8b, 0x09, 0x00]), randomBytes(200)]),
      /^gzip stream is corrupt or truncated \(unknown compression method\)/,
    ],
    [
      "truncated gzip",
      gzipSync(tarArchive([file("a", randomBytes(3000))])).subarray(0, 1000),
      /^gzip stream is corrupt or truncated/,
    ],
  ])("refuses %s", async (_, archive, message) => {
    expect((await refusal(archive)).message).toMatch(message);
  });

  it("refuses more entries than allowed, counting every header", async () => {
    const archive = tarArchive([file("a"), { name: "d/", type: "5" }, file("d/b")]);
    expect(await read(archive, { maxEntries: 3 })).toHaveProperty("size", 2);
    expect((await refusal(archive, { maxEntries: 2 })).message).toBe(
      "archive has more than 2 entries",
    );
  });

  it("refuses a file over its limit from its header, before reading it", async () => {
    const archive = tarArchive([{ ...file("big", "abc"), size: 2_000_000 }], { end: false });
    const error = await refusal(archive, { maxFileBytes: 1_000_000 });
    expect(error).toBeInstanceOf(ArchiveTooLargeError);
    expect(error.message).toBe("big is 2000000 bytes, over the 1000000-byte limit for one file");
  });

  it("stops a gzip bomb at the decompressed limit", async () => {
    // 64 MiB of zeros inside a valid header compresses to about 64 KiB.
    const bomb = gzipSync(
      Buffer.concat([
        tarHeader({ name: "zeros", size: 64 * 1024 * 1024 }),
        Buffer.alloc(64 * 1024 * 1024),
      ]),
    );
    expect(bomb.length).toBeLessThan(200 * 1024);
    const error = await refusal(bomb, { maxTotalBytes: 4 * 1024 * 1024 });
    expect(error).toBeInstanceOf(ArchiveTooLargeError);
    expect(error.message).toBe("archive is larger than 4194304 bytes once decompressed");
  });

  it("stops a gzip bomb by its inflation long before a large limit", async () => {
    const bomb = gzipSync(
      Buffer.concat([
        tarHeader({ name: "zeros", size: 64 * 1024 * 1024 }),
        Buffer.alloc(64 * 1024 * 1024),
      ]),
    );
    const error = await refusal(bomb, { maxTotalBytes: 256 * 1024 * 1024 });
    expect(error).toBeInstanceOf(ArchiveTooLargeError);
    expect(error.message).toMatch(/^gzip stream inflates more than 100-fold \((\d+) bytes/);
    // Refused within a few MiB past the 8 MiB floor, not at 64 or 256 MiB.
    const inflated = Number(/\((\d+) bytes/.exec(error.message)?.[1]);
    expect(inflated).toBeLessThan(12 * 1024 * 1024);
  });

  it("reads a gzip archive of weights that are half zeros, as a fresh LoRA's are", async () => {
    const weights = Buffer.concat([randomBytes(6 * 1024 * 1024), Buffer.alloc(6 * 1024 * 1024)]);
    const files = await readTar(
      chunks(gzipSync(tarArchive([file("adapter_model.safetensors", weights)]))),
    );
    expect(files.get("adapter_model.safetensors")?.length).toBe(weights.length);
  });

  it("never returns or destroys the caller's stream when it refuses an archive", async () => {
    let returned = false;
    const archive = tarArchive([
      { name: "l", type: "2", linkName: "x" },
      file("a", "x".repeat(9000)),
    ]);
    const source: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]() {
        const inner = chunks(archive, 512)[Symbol.asyncIterator]();
        return {
          next: () => inner.next(),
          return: () => {
            returned = true;
            return Promise.resolve({ done: true as const, value: undefined });
          },
        };
      },
    };
    await expect(readTar(source)).rejects.toThrow("links are not accepted");
    expect(returned).toBe(false);
  });

  it("passes the source's own errors through unchanged, gzip or not", async () => {
    const failure = new Error("client went away");
    const archive = tarArchive([file("a", randomBytes(50_000))]);
    for (const bytes of [archive, gzipSync(archive)]) {
      async function* failing(): AsyncGenerator<Buffer> {
        yield bytes.subarray(0, 1000);
        await new Promise((resolve) => setImmediate(resolve));
        throw failure;
      }
      await expect(readTar(failing())).rejects.toBe(failure);
    }
  });
});
