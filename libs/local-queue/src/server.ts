import { unlink } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { WorkMessage } from "@shoal/jetstream";
import {
  encodeFrame,
  FrameDecoder,
  FrameTooLargeError,
  SidecarProtocolError,
  type FrameBody,
} from "@shoal/sidecar-client";
import { HeldQueue } from "./held-queue.js";
import { LocalQueueError } from "./local-queue-error.js";
import {
  compileLocalQueueServerOptions,
  type CompiledLocalQueueServerOptions,
  type LocalQueueServerOptions,
} from "./options.js";
import {
  errorBody,
  parseRequest,
  partsBytes,
  partsToWire,
  requestId,
  type LocalQueueRequest,
  type LocalQueueStats,
} from "./protocol.js";

/** A `take` waiting for items to be put. */
interface Waiter {
  readonly socket: Socket;
  readonly id: number;
  readonly model: string;
  readonly max: number;
  readonly timer: NodeJS.Timeout;
}

/** Takes one connection may have waiting at once; a client needs one per model it serves. */
const MAX_WAITERS_PER_CONNECTION = 1024;

/**
 * The machine-local queue: one per host, shared over a Unix socket by the workers on it. A
 * worker puts the items it pulled but cannot run now; a worker of the same model on the host
 * takes them without a network round trip. The queue holds JetStream deliveries, not copies:
 * it keeps them alive (in-progress) while it holds them, hands each to exactly one taker (who
 * then acks it), and NAKs back to JetStream whatever no local worker took within `holdMs`, or
 * everything on shutdown. If it crashes, what it held is unacked and JetStream redelivers it
 * after the ack wait: nothing is lost.
 */
export class LocalQueueServer {
  readonly #o: CompiledLocalQueueServerOptions;
  readonly #server: Server;
  readonly #held: HeldQueue<WorkMessage>;
  readonly #waiters = new Map<string, Waiter[]>();
  readonly #sockets = new Set<Socket>();
  readonly #progress: NodeJS.Timeout;
  #expiry: NodeJS.Timeout | undefined;
  #closing = false;
  #accepted = 0;
  #refused = 0;
  #handed = 0;
  #returned = 0;

  private constructor(options: CompiledLocalQueueServerOptions, server: Server) {
    this.#o = options;
    this.#server = server;
    this.#held = new HeldQueue(options);
    this.#progress = setInterval(() => {
      for (const msg of this.#held.values()) msg.working();
    }, options.progressIntervalMs);
    server.on("connection", (socket) => {
      this.#accept(socket);
    });
  }

  /**
   * Listens on the socket. A socket file left by a crashed queue is replaced; one a live queue
   * answers on is not.
   *
   * @throws Error when another local queue already serves the path.
   */
  static async listen(options: LocalQueueServerOptions): Promise<LocalQueueServer> {
    const o = compileLocalQueueServerOptions(options);
    if (await answers(o.socketPath)) {
      throw new Error(`a local queue already listens on ${o.socketPath}`);
    }
    await unlink(o.socketPath).catch(() => undefined);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(o.socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return new LocalQueueServer(o, server);
  }

  get socketPath(): string {
    return this.#o.socketPath;
  }

  stats(): LocalQueueStats {
    return {
      held: this.#held.size,
      heldBytes: this.#held.bytes,
      accepted: this.#accepted,
      refused: this.#refused,
      handed: this.#handed,
      returned: this.#returned,
    };
  }

  /**
   * Stops taking work, answers waiting takes with nothing, NAKs every held item back to
   * JetStream (flushed before this resolves) and closes the socket.
   */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#progress);
    clearTimeout(this.#expiry);
    for (const waiters of this.#waiters.values()) {
      for (const w of [...waiters]) this.#answerWaiter(w, []);
    }
    this.#returnToJetStream(this.#held.drain(), "shutdown");
    if (!this.#o.nc.isClosed()) await this.#o.nc.flush();
    const closed = new Promise<void>((resolve) => {
      this.#server.close(() => {
        resolve();
      });
    });
    for (const s of this.#sockets) s.end();
    await closed;
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    const decoder = new FrameDecoder({ maxFrameBytes: this.#o.maxFrameBytes });
    socket.on("data", (chunk: Buffer) => {
      decoder.push(chunk);
      this.#readFrames(socket, decoder);
    });
    socket.on("error", (err) => {
      this.#o.logger.debug({ err }, "local queue connection failed");
    });
    socket.on("close", () => {
      this.#sockets.delete(socket);
      for (const [model, waiters] of this.#waiters) {
        const kept = waiters.filter((w) => w.socket !== socket);
        for (const w of waiters) if (w.socket === socket) clearTimeout(w.timer);
        if (kept.length === 0) this.#waiters.delete(model);
        else this.#waiters.set(model, kept);
      }
    });
  }

  #readFrames(socket: Socket, decoder: FrameDecoder): void {
    for (;;) {
      try {
        for (const body of decoder.frames()) this.#onFrame(socket, body);
        return;
      } catch (err) {
        if (err instanceof FrameTooLargeError) {
          // Nothing after a hostile length can be framed: say why, then drop the connection.
          send(socket, errorBody(0, "frame_too_large", err.message));
          socket.end();
          return;
        }
        if (!(err instanceof SidecarProtocolError)) throw err;
        // The length prefix kept the stream in sync: refuse this frame and read on.
        send(socket, errorBody(0, "bad_frame", err.message));
      }
    }
  }

  #onFrame(socket: Socket, body: FrameBody): void {
    let request: LocalQueueRequest;
    try {
      request = parseRequest(body);
    } catch (err) {
      if (!(err instanceof LocalQueueError)) throw err;
      send(socket, errorBody(requestId(body) ?? 0, err.code, err.message));
      return;
    }
    switch (request.op) {
      case "put":
        this.#put(socket, request);
        return;
      case "take":
        this.#take(socket, request);
        return;
      case "cancel":
        this.#cancel(socket, request);
        return;
      case "stats":
        send(socket, { id: request.id, ok: true, ...this.#wireStats() });
        return;
    }
  }

  #put(socket: Socket, request: Extract<LocalQueueRequest, { op: "put" }>): void {
    if (this.#closing) {
      send(socket, errorBody(request.id, "shutting_down", "the local queue is shutting down"));
      return;
    }
    let entries: { value: WorkMessage; bytes: number }[];
    try {
      entries = request.items.map((parts) => ({
        value: WorkMessage.fromParts(this.#o.nc, parts),
        bytes: partsBytes(parts),
      }));
    } catch (err) {
      send(socket, errorBody(request.id, "bad_request", (err as Error).message));
      return;
    }
    // Waiting takers get items at once, oldest waiter first; the rest is held.
    let next = 0;
    const waiters = this.#waiters.get(request.model) ?? [];
    while (next < entries.length && waiters.length > 0) {
      const w = waiters[0] as Waiter;
      const given = entries.slice(next, next + w.max).map((e) => e.value);
      next += given.length;
      this.#answerWaiter(w, given);
    }
    const rest = entries.slice(next);
    const held = this.#held.put(request.model, rest, performance.now());
    this.#accepted += next + held;
    this.#refused += rest.length - held;
    send(socket, { id: request.id, ok: true, accepted: next + held });
    this.#scheduleExpiry();
  }

  #take(socket: Socket, request: Extract<LocalQueueRequest, { op: "take" }>): void {
    const items = this.#closing ? [] : this.#held.take(request.model, request.max);
    if (items.length > 0 || request.waitMs === 0 || this.#closing) {
      this.#handOut(socket, request.id, items);
      return;
    }
    let count = 0;
    for (const waiters of this.#waiters.values()) {
      for (const w of waiters) if (w.socket === socket) count++;
    }
    if (count >= MAX_WAITERS_PER_CONNECTION) {
      send(
        socket,
        errorBody(
          request.id,
          "bad_request",
          `more than ${MAX_WAITERS_PER_CONNECTION} takes waiting`,
        ),
      );
      return;
    }
    const waiter: Waiter = {
      socket,
      id: request.id,
      model: request.model,
      max: request.max,
      timer: setTimeout(() => {
        this.#answerWaiter(waiter, []);
      }, request.waitMs),
    };
    const waiters = this.#waiters.get(request.model);
    if (waiters === undefined) this.#waiters.set(request.model, [waiter]);
    else waiters.push(waiter);
  }

  #cancel(socket: Socket, request: Extract<LocalQueueRequest, { op: "cancel" }>): void {
    for (const waiters of this.#waiters.values()) {
      const w = waiters.find((x) => x.socket === socket && x.id === request.target);
      if (w !== undefined) {
        this.#answerWaiter(w, []);
        send(socket, { id: request.id, ok: true, cancelled: true });
        return;
      }
    }
    send(socket, { id: request.id, ok: true, cancelled: false });
  }

  #answerWaiter(w: Waiter, items: WorkMessage[]): void {
    clearTimeout(w.timer);
    const waiters = this.#waiters.get(w.model);
    if (waiters !== undefined) {
      const i = waiters.indexOf(w);
      if (i >= 0) waiters.splice(i, 1);
      if (waiters.length === 0) this.#waiters.delete(w.model);
    }
    this.#handOut(w.socket, w.id, items);
  }

  /**
   * Gives items to a taker. From here the taker answers for them; should the taker die with
   * them, they are unacked deliveries JetStream redelivers after the ack wait.
   */
  #handOut(socket: Socket, id: number, items: WorkMessage[]): void {
    if (socket.destroyed || !socket.writable) {
      // The taker is gone before it got them: back to JetStream now, not after the ack wait.
      this.#returnToJetStream(items, "taker disconnected");
      return;
    }
    this.#handed += items.length;
    send(socket, { id, ok: true, items: items.map((msg) => partsToWire(msg.handOff())) });
  }

  #scheduleExpiry(): void {
    clearTimeout(this.#expiry);
    const at = this.#held.nextExpiryMs();
    if (at === undefined || this.#closing) return;
    this.#expiry = setTimeout(
      () => {
        this.#returnToJetStream(this.#held.expire(performance.now()), "no local taker");
        this.#scheduleExpiry();
      },
      Math.max(1, Math.ceil(at - performance.now())),
    );
  }

  #returnToJetStream(messages: readonly WorkMessage[], reason: string): void {
    if (messages.length === 0) return;
    for (const msg of messages) msg.nak();
    this.#returned += messages.length;
    this.#o.logger.debug(
      { items: messages.length, reason },
      "local queue returned items to JetStream",
    );
  }

  #wireStats(): Record<string, number> {
    const s = this.stats();
    return {
      held: s.held,
      held_bytes: s.heldBytes,
      accepted: s.accepted,
      refused: s.refused,
      handed: s.handed,
      returned: s.returned,
    };
  }
}

function send(socket: Socket, body: FrameBody): void {
  if (!socket.destroyed && socket.writable) socket.write(encodeFrame(body));
}

/** Whether something accepts connections on the socket path. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => {
      resolve(false);
    });
  });
}
