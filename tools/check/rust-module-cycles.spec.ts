import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { crateGraph, cyclesOf, graphOf } from "./rust-module-cycles.js";

const crate = (files: Record<string, string>) => graphOf(new Map(Object.entries(files)));

describe("rust module circles", () => {
  it("finds two siblings that name each other, however the paths are written", () => {
    const graph = crate({
      "": "mod runner; mod work;",
      runner: "use crate::work::{self, Answer};\nfn f() { work::run(); }",
      work: "pub fn run() { let _ = super::runner::Job::new(); }",
    });
    expect(cyclesOf(graph)).toEqual([
      {
        path: ["crate::runner", "crate::work", "crate::runner"],
        members: ["crate::runner", "crate::work"],
      },
    ]);
  });

  it("reads a path that starts at a child module in an expression", () => {
    const graph = crate({
      models: "pub mod bert; pub trait Encoder {}\nfn build() { bert::BertModel::load(); }",
      "models::bert": "use super::Encoder; pub struct BertModel;",
    });
    expect(graph.get("models")).toEqual(new Set(["models::bert"]));
    expect(cyclesOf(graph).map((c) => c.members)).toEqual([
      ["crate::models", "crate::models::bert"],
    ]);
  });

  it("follows re-exports to the module that defines an item", () => {
    // `crate::Error` is error's, re-exported by the root: backend → error, not backend → root.
    const graph = crate({
      "": "mod backend; mod error; pub use backend::Backend; pub use error::Error;",
      backend: "use crate::Error;",
      error: "pub struct Error;",
    });
    expect(graph.get("backend")).toEqual(new Set(["error"]));
    expect(cyclesOf(graph)).toEqual([]);
  });

  it("reads a child named relatively from its parent, and its `super` back", () => {
    const graph = crate({
      request: "mod heads; use heads::decode; pub struct Fields;",
      "request::heads": "use super::Fields; pub fn decode() {}",
    });
    expect(cyclesOf(graph).map((c) => c.members)).toEqual([
      ["crate::request", "crate::request::heads"],
    ]);
  });

  it("ignores test-only code, comments and strings", () => {
    const graph = crate({
      a: [
        "//! see crate::b for the other half",
        'const M: &str = "crate::b::X";',
        "const Q: char = '\"'; fn f() {}",
        "#[cfg(test)]\nmod tests {\n    use crate::b::helper;\n}",
      ].join("\n"),
      b: "use crate::a::f;",
    });
    expect(graph.get("a")).toEqual(new Set());
    expect(cyclesOf(graph)).toEqual([]);
  });

  it("has no circles in the sidecar's server crate between its job layer and the thread loops", () => {
    const graph = crateGraph(join(import.meta.dirname, "../../sidecar-rs/crates/server/src"));
    const circles = cyclesOf(graph).map((c) => c.members);
    expect(circles.flat()).not.toContain("crate::runner");
    expect(graph.get("job")).not.toContain("runner");
  });
});
