import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  ErrorCode,
  FinishReason,
  StreamControlSchema,
  StreamEventSchema,
  type StreamControl,
  type StreamEvent,
} from "@shoal/proto";
import { afterEach, describe, expect, it } from "vitest";
import { DeadlineExceededError, InvalidArgumentError, UnavailableError } from "./errors.js";
import { GenerationStream, type GenerationEvent } from "./generation-stream.js";

const sent: { subject: string; control: StreamControl }[] = [];
let streams: GenerationStream[] = [];

function stream(n = 1, window = 4, startTimeoutMs = 5000): GenerationStream {
  const s = new GenerationStream({
    requestId: "r",
    n,
    window,
    startTimeoutMs,
    idleTimeoutMs: 5000,
    sendControl: (subject, control) => {
      // Through the wire format, as ingress sends it.
      sent.push({ subject, control: fromBinary(StreamControlSchema, toWire(control)) });
    },
    onEnd: () => undefined,
  });
  streams.push(s);
  return s;
}

function toWire(control: StreamControl): Uint8Array {
  return toBinary(StreamControlSchema, control);
}

afterEach(() => {
  for (const s of streams) s.cancel();
  streams = [];
  sent.length = 0;
});

function tokens(seq: number, text: string, attempt = "a", index = 0): StreamEvent {
  return create(StreamEventSchema, {
    requestId: "r",
    attempt,
    seq,
    controlSubject: `ctl.${attempt}`,
    event: { case: "tokens", value: { index, text, tokens: 1 } },
  });
}

function done(seq: number, index = 0, attempt = "a"): StreamEvent {
  return create(StreamEventSchema, {
    requestId: "r",
    attempt,
    seq,
    controlSubject: `ctl.${attempt}`,
    event: {
      case: "done",
      value: { index, finishReason: FinishReason.LENGTH, promptTokens: 3, completionTokens: 2 },
    },
  });
}

async function all(s: GenerationStream): Promise<GenerationEvent[]> {
  const events: GenerationEvent[] = [];
  for await (const e of s) events.push(e);
  return events;
}

describe("GenerationStream", () => {
  it("yields events in order and ends after every sequence's done", async () => {
    const s = stream(2);
    s.deliver(tokens(0, "He"));
    s.deliver(tokens(1, "Yo", "a", 1));
    s.deliver(done(2, 1));
    s.deliver(tokens(3, "llo"));
    s.deliver(done(4, 0));
    await expect(s.started()).resolves.toBeUndefined();
    const events = await all(s);
    expect(events.map((e) => (e.kind === "tokens" ? e.text : `done${e.index}`))).toEqual([
      "He",
      "Yo",
      "done1",
      "llo",
      "done0",
    ]);
    expect(events.at(-1)).toMatchObject({
      finishReason: "length",
      promptTokens: 3,
      completionTokens: 2,
    });
    expect(s.ended).toBe(true);
  });

  it("credits the worker as the client takes events, never before", async () => {
    const s = stream(1, 4);
    for (let i = 0; i < 3; i++) s.deliver(tokens(i, String(i)));
    expect(sent).toEqual([]);
    const it = s[Symbol.asyncIterator]();
    await it.next();
    // One taken is not worth a message while the worker still has room...
    expect(sent).toEqual([]);
    await it.next();
    // ...half the window is.
    expect(sent.map((m) => m.control.taken)).toEqual([2]);
    for (let i = 3; i < 6; i++) s.deliver(tokens(i, String(i)));
    await it.next();
    // The worker has used its whole window beyond the last credit: credit goes out at once.
    expect(sent.map((m) => m.control.taken)).toEqual([2, 3]);
    expect(sent.every((m) => m.subject === "ctl.a" && m.control.attempt === "a")).toBe(true);
  });

  it("cancels an attempt other than the one it is bound to", async () => {
    const s = stream();
    s.deliver(tokens(0, "first"));
    s.deliver(tokens(0, "second", "b"));
    s.deliver(done(1));
    expect(sent.map((m) => [m.subject, m.control.attempt, m.control.cancel])).toEqual([
      ["ctl.b", "b", true],
    ]);
    expect((await all(s)).map((e) => e.kind === "tokens" && e.text)).toEqual(["first", false]);
  });

  it("drops a repeated seq and fails on a gap", async () => {
    const s = stream();
    s.deliver(tokens(0, "a"));
    s.deliver(tokens(0, "a"));
    s.deliver(tokens(2, "c"));
    await expect(all(s)).rejects.toBeInstanceOf(UnavailableError);
  });

  it("fails a worker that ignores the window, and tells it to stop", async () => {
    const s = stream(1, 2);
    for (let i = 0; i < 5; i++) s.deliver(tokens(i, "x"));
    await expect(all(s)).rejects.toThrow(/flow control/);
    expect(sent.at(-1)?.control.cancel).toBe(true);
  });

  it("ends with the worker's error", async () => {
    const s = stream();
    s.deliver(
      create(StreamEventSchema, {
        requestId: "r",
        attempt: "a",
        seq: 0,
        controlSubject: "ctl.a",
        event: { case: "error", value: { code: ErrorCode.INVALID_ARGUMENT, message: "too long" } },
      }),
    );
    await expect(s.started()).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(all(s)).rejects.toThrow("too long");
  });

  it("times out when the generation does not start", async () => {
    const s = stream(1, 4, 50);
    await expect(s.started()).rejects.toBeInstanceOf(DeadlineExceededError);
  });

  it("cancel tells the bound attempt to stop and ends iteration", async () => {
    const s = stream();
    s.deliver(tokens(0, "a"));
    s.cancel();
    expect(sent.map((m) => [m.subject, m.control.cancel])).toEqual([["ctl.a", true]]);
    expect(await all(s)).toHaveLength(1);
    // Events that still arrive are answered with another cancel.
    s.deliver(tokens(1, "b"));
    expect(sent).toHaveLength(2);
  });
});
