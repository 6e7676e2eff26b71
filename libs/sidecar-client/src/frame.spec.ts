import { encode } from "@msgpack/msgpack";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, FRAME_HEADER_BYTES, FrameDecoder } from "./frame.js";
import { FrameTooLargeError } from "./frame-too-large-error.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";

/** A frame with an arbitrary, already-encoded body, to feed the decoder what encodeFrame never makes. */
function rawFrame(body: Uint8Array): Uint8Array {
  const frame = new Uint8Array(FRAME_HEADER_BYTES + body.byteLength);
  new DataView(frame.buffer).setUint32(0, body.byteLength, false);
  frame.set(body, FRAME_HEADER_BYTES);
  return frame;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

function decodeAll(decoder: FrameDecoder, chunks: readonly Uint8Array[]): unknown[] {
  const bodies: unknown[] = [];
  for (const chunk of chunks) {
    decoder.push(chunk);
    for (const body of decoder.frames()) bodies.push(body);
  }
  return bodies;
}

describe("encodeFrame", () => {
  it("prefixes the MessagePack body with its big-endian u32 length", () => {
    const frame = encodeFrame({ id: 7, op: "health" });
    const body = encode({ id: 7, op: "health" });
    expect(Array.from(frame.subarray(0, 4))).toEqual([0, 0, 0, body.byteLength]);
    expect(frame.subarray(4)).toEqual(body);
  });

  it("writes lengths above 255 across all four prefix bytes", () => {
    const frame = encodeFrame({ blob: new Uint8Array(70_000) });
    const length = new DataView(frame.buffer).getUint32(0, false);
    expect(length).toBe(frame.byteLength - 4);
    expect(frame[1]).toBe(1);
  });

  it("omits undefined fields rather than sending nil", () => {
    const [body] = decodeAll(new FrameDecoder(), [encodeFrame({ id: 1, traceparent: undefined })]);
    expect(body).toEqual({ id: 1 });
    expect(Object.keys(body as object)).toEqual(["id"]);
  });

  it("sends Uint8Array as bin", () => {
    const bytes = new Uint8Array([1, 2, 3, 255]);
    const [body] = decodeAll(new FrameDecoder(), [encodeFrame({ embeddings: bytes })]);
    expect((body as { embeddings: unknown }).embeddings).toBeInstanceOf(Uint8Array);
    expect((body as { embeddings: Uint8Array }).embeddings).toEqual(bytes);
  });
});

describe("FrameDecoder", () => {
  it("decodes coalesced frames from one chunk", () => {
    const chunk = concat([encodeFrame({ id: 1 }), encodeFrame({ id: 2 }), encodeFrame({ id: 3 })]);
    expect(decodeAll(new FrameDecoder(), [chunk])).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
  });

  it("decodes a frame delivered one byte at a time", () => {
    const frame = encodeFrame({ id: 9, op: "embed", inputs: ["a", "b"] });
    const decoder = new FrameDecoder();
    const chunks = Array.from(frame, (byte) => new Uint8Array([byte]));
    expect(decodeAll(decoder, chunks)).toEqual([{ id: 9, op: "embed", inputs: ["a", "b"] }]);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it("holds a partial frame until the rest arrives", () => {
    const frame = encodeFrame({ id: 5 });
    const decoder = new FrameDecoder();
    decoder.push(frame.subarray(0, 6));
    expect([...decoder.frames()]).toEqual([]);
    expect(decoder.bufferedBytes).toBe(2);
    decoder.push(frame.subarray(6));
    expect([...decoder.frames()]).toEqual([{ id: 5 }]);
  });

  it("returns a bin held in one chunk as a view of the received bytes", () => {
    const chunk = encodeFrame({ embeddings: new Uint8Array([10, 20, 30]) });
    const [body] = decodeAll(new FrameDecoder(), [chunk]);
    const view = (body as { embeddings: Uint8Array }).embeddings;
    expect(view.buffer).toBe(chunk.buffer);
  });

  it("rejects a length prefix above maxFrameBytes before buffering the body, and stays failed", () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 16 });
    decoder.push(new Uint8Array([0, 0, 0, 17]));
    expect(() => [...decoder.frames()]).toThrow(FrameTooLargeError);
    decoder.push(encodeFrame({ id: 1 }));
    expect(() => [...decoder.frames()]).toThrow(
      "frame body of 17 bytes exceeds the limit of 16 bytes",
    );
    expect(decoder.bufferedBytes).toBe(0);
  });

  it("accepts a body of exactly maxFrameBytes", () => {
    const frame = encodeFrame({ id: 1, s: "x" });
    const decoder = new FrameDecoder({ maxFrameBytes: frame.byteLength - 4 });
    expect(decodeAll(decoder, [frame])).toEqual([{ id: 1, s: "x" }]);
  });

  it("yields bodies before a too-large prefix in the same chunk", () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 64 });
    decoder.push(concat([encodeFrame({ id: 1 }), new Uint8Array([0, 1, 0, 0])]));
    const seen: unknown[] = [];
    expect(() => {
      for (const body of decoder.frames()) seen.push(body);
    }).toThrow(FrameTooLargeError);
    expect(seen).toEqual([{ id: 1 }]);
  });

  it.each([
    { name: "an array", body: encode([1, 2]), message: "not a MessagePack map (got array)" },
    { name: "a string", body: encode("hi"), message: "not a MessagePack map (got string)" },
    { name: "nil", body: encode(null), message: "not a MessagePack map (got nil)" },
    { name: "empty", body: new Uint8Array(0), message: "not valid MessagePack" },
    {
      name: "truncated MessagePack",
      body: encode({ id: 1, op: "x" }).subarray(0, 5),
      message: "not valid MessagePack",
    },
    {
      name: "two values",
      body: concat([encode({ id: 1 }), encode({ id: 2 })]),
      message: "not valid MessagePack",
    },
    {
      name: "a map with integer keys",
      body: new Uint8Array([0x81, 0x01, 0xa1, 0x61]),
      message: "non-string map key",
    },
  ])("rejects a body that is $name and stays in sync", ({ body, message }) => {
    const decoder = new FrameDecoder();
    decoder.push(concat([rawFrame(body), encodeFrame({ id: 2 })]));
    const frames = decoder.frames();
    expect(() => frames.next()).toThrow(SidecarProtocolError);
    const again = new FrameDecoder();
    again.push(rawFrame(body));
    expect(() => [...again.frames()]).toThrow(message);
    expect([...decoder.frames()]).toEqual([{ id: 2 }]);
  });

  it.each([0, -1, 1.5, 2 ** 32])("rejects maxFrameBytes %s", (maxFrameBytes) => {
    expect(() => new FrameDecoder({ maxFrameBytes })).toThrow(RangeError);
  });

  const valueArb = fc.oneof(
    fc.integer({ min: -(2 ** 31), max: 2 ** 32 }),
    fc.string(),
    fc.boolean(),
    fc.uint8Array({ maxLength: 64 }),
    fc.array(fc.string(), { maxLength: 4 }),
  );
  const bodyArb = fc
    .dictionary(fc.string({ minLength: 1, maxLength: 8 }), valueArb, {
      maxKeys: 6,
      noNullPrototype: true,
    })
    .filter((body) => !Object.hasOwn(body, "__proto__"));

  it("decodes any sequence of frames split at arbitrary points to the same bodies", () => {
    fc.assert(
      fc.property(
        fc.array(bodyArb, { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (bodies, cutSeeds) => {
          const stream = concat(bodies.map((body) => encodeFrame(body)));
          const cuts = [...new Set(cutSeeds.map((seed) => seed % (stream.byteLength + 1)))].sort(
            (a, b) => a - b,
          );
          const chunks: Uint8Array[] = [];
          let start = 0;
          for (const cut of [...cuts, stream.byteLength]) {
            chunks.push(stream.slice(start, cut));
            start = cut;
          }
          const decoder = new FrameDecoder();
          expect(decodeAll(decoder, chunks)).toEqual(bodies);
          expect(decoder.bufferedBytes).toBe(0);
        },
      ),
    );
  });
});
