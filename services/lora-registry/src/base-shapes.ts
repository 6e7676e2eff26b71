import { readBaseShape, type BaseShape } from "@shoal/adapters";
import type { ModelEntry } from "@shoal/config";
import { ensureModel, type CompiledEnsureModelOptions } from "@shoal/model-sources";

/**
 * The shape of each base model adapters are checked against, read once per base: the model's
 * files are fetched the way a worker fetches them (`ensureModel`, joined when a fetch is
 * already running) and its GGUF metadata or `config.json` is read. A failure is not cached,
 * so the next upload tries again.
 */
export class BaseShapes {
  readonly #sources: CompiledEnsureModelOptions;
  readonly #shapes = new Map<string, Promise<BaseShape>>();

  constructor(sources: CompiledEnsureModelOptions) {
    this.#sources = sources;
  }

  /**
   * @throws ModelSourceError when the base model's files cannot be fetched.
   * @throws InvalidBaseModelError when its shape cannot be read.
   */
  shapeOf(entry: ModelEntry): Promise<BaseShape> {
    let shape = this.#shapes.get(entry.id);
    if (shape === undefined) {
      shape = ensureModel(entry, this.#sources).then((dir) =>
        readBaseShape(dir, entry.weights ?? "safetensors"),
      );
      shape.catch(() => this.#shapes.delete(entry.id));
      this.#shapes.set(entry.id, shape);
    }
    return shape;
  }
}
