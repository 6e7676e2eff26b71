import { freePort } from "./free-port.js";
import { ManagedProcess } from "./managed-process.js";
import { llamaPython, smollm2Gguf } from "./paths.js";

/** llama-cpp-python's OpenAI-compatible server, serving SmolLM2, owned by a test. */
export interface LlamaServerHandle {
  /** `http://127.0.0.1:<port>`, without `/v1`. */
  readonly url: string;
  /** The name it serves SmolLM2 under. */
  readonly alias: string;
  /** The server process, for a test that kills it. */
  readonly process: ManagedProcess;
  /** Stops the server. Safe to call more than once. */
  stop(): Promise<void>;
}

export interface LlamaServerOptions {
  readonly alias: string;
  /** Bearer key the server requires. @default none */
  readonly apiKey?: string;
  /**
   * Serve `/v1/embeddings` (mean-pooled: SmolLM2's GGUF names no pooling of its own) instead of
   * chat and completions. @default false
   */
  readonly embedding?: boolean;
  /** @default 240 s: the first start imports llama.cpp and maps the GGUF. */
  readonly readyTimeoutMs?: number;
}

/**
 * Starts `llama_cpp.server` for chat and completions (or embeddings) over the real SmolLM2 GGUF
 * on a free port of 127.0.0.1, one thread, and resolves once `GET /v1/models` answers.
 *
 * @throws MissingPrerequisiteError when llama-cpp-python or the GGUF is missing.
 */
export async function startLlamaServer(options: LlamaServerOptions): Promise<LlamaServerHandle> {
  const python = llamaPython();
  const gguf = smollm2Gguf();
  const port = await freePort();
  const args = [
    "-m",
    "llama_cpp.server",
    "--model",
    gguf,
    "--model_alias",
    options.alias,
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--n_ctx",
    "2048",
    "--n_threads",
    "1",
    // Its default stops a running stream whenever another request arrives.
    "--interrupt_requests",
    "false",
    ...(options.embedding === true
      ? ["--embedding", "true", "--kv_overrides", "llama.pooling_type=int:1"]
      : []),
    ...(options.apiKey === undefined ? [] : ["--api_key", options.apiKey]),
  ];
  const child = ManagedProcess.spawn(python, args, { env: process.env, stdin: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  const headers: Record<string, string> =
    options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` };
  const until = Date.now() + (options.readyTimeoutMs ?? 240_000);
  for (;;) {
    if (child.exit !== undefined) {
      throw new Error(`llama_cpp.server exited before it was ready:\n${child.output()}`);
    }
    const ready = await fetch(`${url}/v1/models`, { headers }).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > until) {
      await child.terminate("SIGKILL");
      throw new Error(`llama_cpp.server did not answer on ${url} in time:\n${child.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  let stopped = false;
  return {
    url,
    alias: options.alias,
    process: child,
    async stop() {
      if (stopped) return;
      stopped = true;
      await child.terminate();
    },
  };
}
