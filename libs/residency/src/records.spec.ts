import { encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import {
  decodeControlReply,
  decodeControlRequest,
  decodeHeartbeat,
  encodeControl,
  controlSubject,
} from "./control.js";
import {
  decodeModel,
  decodeReplica,
  encodeModel,
  encodeReplica,
  modelKey,
  replicaKey,
  ResidencyRecordError,
} from "./records.js";

describe("residency records", () => {
  it("round-trip", () => {
    const replica = {
      model: "a",
      worker: "w1",
      node: "n1",
      state: "resident",
      memoryBytes: 90_261_504,
      sinceUnixMs: 1_700_000_000_000,
    } as const;
    expect(decodeReplica(encodeReplica(replica))).toEqual(replica);
    const failed = { model: "a", state: "failed", message: "bad", updatedUnixMs: 5 } as const;
    expect(decodeModel(encodeModel(failed))).toEqual(failed);
    const fetching = {
      model: "a",
      state: "fetching",
      bytesDone: 10,
      bytesTotal: 20,
      updatedUnixMs: 5,
    } as const;
    expect(decodeModel(encodeModel(fetching))).toEqual(fetching);
  });

  it("keys refuse tokens that would change the subject", () => {
    expect(replicaKey("all-minilm-l6-v2", "w1")).toBe("replica.all-minilm-l6-v2.w1");
    expect(modelKey("a")).toBe("model.a");
    expect(() => replicaKey("a.b", "w1")).toThrow(ResidencyRecordError);
    expect(() => replicaKey("a", "*")).toThrow(ResidencyRecordError);
    expect(() => controlSubject("w>")).toThrow(ResidencyRecordError);
  });

  it.each([
    ["garbage", new Uint8Array([0xc1])],
    ["an array", encode([1, 2])],
    ["a string", encode("resident")],
    [
      "a wrong state",
      encode({ model: "a", worker: "w", node: "n", state: "gone", memoryBytes: 1, sinceUnixMs: 1 }),
    ],
    [
      "a negative size",
      encode({
        model: "a",
        worker: "w",
        node: "n",
        state: "resident",
        memoryBytes: -1,
        sinceUnixMs: 1,
      }),
    ],
    [
      "a missing field",
      encode({ model: "a", worker: "w", state: "resident", memoryBytes: 1, sinceUnixMs: 1 }),
    ],
  ])("a replica record that is %s is a typed error", (_name, bytes) => {
    expect(() => decodeReplica(bytes)).toThrow(ResidencyRecordError);
  });
});

describe("control protocol", () => {
  it("round-trips requests, replies and heartbeats", () => {
    expect(decodeControlRequest(encodeControl({ op: "load", model: "a" }))).toEqual({
      op: "load",
      model: "a",
    });
    expect(decodeControlReply(encodeControl({ ok: true, memoryBytes: 5, loadUs: 7 }))).toEqual({
      ok: true,
      memoryBytes: 5,
      loadUs: 7,
    });
    expect(decodeControlReply(encodeControl({ ok: false, code: "oom", message: "m" }))).toEqual({
      ok: false,
      code: "oom",
      message: "m",
    });
    const hb = {
      worker: "w1",
      node: "n1",
      capacityBytes: 300,
      models: [
        { model: "a", state: "resident", memoryBytes: 100, items: 3 },
        {
          model: "b",
          state: "resident",
          memoryBytes: 9,
          items: 8,
          batches: 2,
          busyUs: 40,
          putBacks: 1,
        },
      ],
    } as const;
    expect(decodeHeartbeat(encodeControl(hb))).toEqual(hb);
  });

  it.each([
    ["an unknown op", encode({ op: "format-disk", model: "a" })],
    ["no model", encode({ op: "load" })],
    ["a model that is not a string", encode({ op: "load", model: 3 })],
    ["not a map", encode(["load", "a"])],
  ])("refuses a request with %s", (_name, bytes) => {
    expect(() => decodeControlRequest(bytes)).toThrow(ResidencyRecordError);
  });

  it("refuses malformed replies and heartbeats", () => {
    expect(() => decodeControlReply(encode({ ok: "yes" }))).toThrow(ResidencyRecordError);
    expect(() => decodeControlReply(encode({ ok: false, code: "nope", message: "m" }))).toThrow(
      ResidencyRecordError,
    );
    expect(() =>
      decodeHeartbeat(encode({ worker: "w", node: "n", capacityBytes: 1, models: [5] })),
    ).toThrow(ResidencyRecordError);
    expect(() =>
      decodeHeartbeat(encode({ worker: "w", node: "n", capacityBytes: 1, models: "all" })),
    ).toThrow(ResidencyRecordError);
    const counted = { model: "a", state: "resident", memoryBytes: 1, items: 1 };
    expect(() =>
      decodeHeartbeat(
        encode({ worker: "w", node: "n", capacityBytes: 1, models: [{ ...counted, busyUs: -4 }] }),
      ),
    ).toThrow(/busyUs must be an unsigned integer/);
  });
});
