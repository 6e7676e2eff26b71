import { toBinary, type DescFile, type DescMessage } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

/**
 * A set of proto files and their transitive imports, looked up the ways
 * server reflection asks: by file name, by fully qualified symbol, by extension. Built once
 * from the descriptors protobuf-es embeds in the generated code, so what reflection describes
 * is exactly what the server decodes.
 */
export class DescriptorIndex {
  readonly #files = new Map<string, DescFile>();
  readonly #symbols = new Map<string, DescFile>();
  readonly #messages = new Map<string, DescMessage>();
  /** Extensions by `<extendee>:<number>`. */
  readonly #extensions = new Map<string, DescFile>();
  readonly #serialized = new Map<DescFile, Uint8Array>();

  constructor(files: readonly DescFile[]) {
    for (const file of files) this.#addFile(file);
  }

  /** A file by the name it is imported as, e.g. `shoal/inference/v1/inference.proto`. */
  fileByName(name: string): DescFile | undefined {
    return this.#files.get(name);
  }

  /** The file declaring a service, method, message, field, enum or extension. */
  fileContainingSymbol(symbol: string): DescFile | undefined {
    return this.#symbols.get(symbol);
  }

  fileContainingExtension(extendee: string, number: number): DescFile | undefined {
    return this.#extensions.get(`${extendee}:${number}`);
  }

  message(typeName: string): DescMessage | undefined {
    return this.#messages.get(typeName);
  }

  /** Extension numbers of a message type, among the indexed files. */
  extensionNumbers(typeName: string): number[] {
    const prefix = `${typeName}:`;
    return [...this.#extensions.keys()]
      .filter((key) => key.startsWith(prefix))
      .map((key) => Number(key.slice(prefix.length)))
      .sort((a, b) => a - b);
  }

  /**
   * Serialized `FileDescriptorProto`s of `file` and its transitive imports, `file` first,
   * leaving out imports whose names are in `sent` and adding the names sent to it: a client
   * keeps what it received earlier on the same stream.
   */
  withDependencies(file: DescFile, sent: Set<string>): Uint8Array[] {
    const out: Uint8Array[] = [];
    const visit = (f: DescFile, requested: boolean): void => {
      const name = f.proto.name;
      if (sent.has(name) && !requested) return;
      sent.add(name);
      out.push(this.#bytes(f));
      for (const dep of f.dependencies) visit(dep, false);
    };
    visit(file, true);
    return out;
  }

  #bytes(file: DescFile): Uint8Array {
    let bytes = this.#serialized.get(file);
    if (bytes === undefined) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.#serialized.set(file, bytes);
    }
    return bytes;
  }

  #addFile(file: DescFile): void {
    if (this.#files.has(file.proto.name)) return;
    this.#files.set(file.proto.name, file);
    for (const type of nestedTypes(file)) {
      this.#symbols.set(type.typeName, file);
      switch (type.kind) {
        case "message":
          this.#messages.set(type.typeName, type);
          for (const field of type.fields)
            this.#symbols.set(`${type.typeName}.${field.name}`, file);
          break;
        case "service":
          for (const method of type.methods) {
            this.#symbols.set(`${type.typeName}.${method.name}`, file);
          }
          break;
        case "extension":
          this.#extensions.set(`${type.extendee.typeName}:${type.number}`, file);
          break;
        case "enum":
          break;
      }
    }
    for (const dep of file.dependencies) this.#addFile(dep);
  }
}
