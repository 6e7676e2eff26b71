/**
 * The parts of the gRPC-over-HTTP/2 wire format (grpc/doc/PROTOCOL-HTTP2.md) that the unary
 * fast path needs: the length-prefixed message, the `grpc-timeout` header and the
 * percent-encoded `grpc-message` trailer.
 */

/** Bytes before each message: a compressed flag and a big-endian u32 length. */
export const ENVELOPE_BYTES = 5;

/** The one message of a unary request body, or why the body is not one. */
export function unaryMessage(body: Buffer): { message: Uint8Array } | { error: string } {
  if (body.length < ENVELOPE_BYTES) return { error: "request body is not a gRPC message" };
  if (body[0] !== 0) return { error: "compressed message without a grpc-encoding" };
  const length = body.readUInt32BE(1);
  if (body.length !== ENVELOPE_BYTES + length) {
    return { error: "request body is not exactly one gRPC message" };
  }
  return { message: body.subarray(ENVELOPE_BYTES) };
}

/** `message` with its envelope, uncompressed. */
export function envelope(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(ENVELOPE_BYTES + message.byteLength);
  out[0] = 0;
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, ENVELOPE_BYTES);
  return out;
}

const UNITS_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/**
 * The client's deadline from `grpc-timeout` (up to 8 digits and a unit), ms; undefined when
 * absent. A malformed value is an error, as the specification treats it.
 */
export function grpcTimeoutMs(header: string | undefined): number | undefined | "malformed" {
  if (header === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(header);
  if (m === null) return "malformed";
  return Number(m[1]) * (UNITS_MS[m[2] as string] as number);
}

/** `grpc-message` as the specification asks: percent-encoded outside printable ASCII and `%`. */
export function grpcMessage(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
