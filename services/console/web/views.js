import { ago, bytes, el, memoryBar, num, percent, sparkline, table } from "./draw.js";

/** @typedef {import("../src/snapshot.js").ConsoleSnapshot} Snapshot */

/** @param {Snapshot} s */
export function fleetView(s) {
  if (s.nodes.length === 0) {
    return [el("p", { class: "empty" }, "No worker has sent a heartbeat yet.")];
  }
  return s.nodes.map((node) => {
    const capacity = node.workers.reduce((n, w) => n + w.capacityBytes, 0);
    const used = node.workers.reduce((n, w) => n + w.usedBytes, 0);
    return el(
      "div",
      { class: "node", "data-node": node.node },
      el(
        "h2",
        {},
        `Node ${node.node}`,
        el(
          "span",
          { class: "meta" },
          ` ${node.workers.length} accelerator${node.workers.length === 1 ? "" : "s"} · ${bytes(used)} of ${bytes(capacity)} in use`,
        ),
      ),
      el(
        "div",
        { class: "cards" },
        ...node.workers.map((w) => {
          const free = Math.max(0, w.capacityBytes - w.usedBytes);
          return el(
            "article",
            { class: `card${w.stale ? " stale" : ""}`, "data-worker": w.worker },
            el(
              "h3",
              {},
              w.worker,
              w.stale &&
                el("span", { class: "tag down" }, `silent since ${ago(s.at - w.lastSeenAt)}`),
            ),
            memoryBar(
              w.capacityBytes,
              w.headroomBytes,
              w.copies.map((c) => ({ label: c.id, bytes: c.memoryBytes, state: c.state })),
            ),
            el(
              "p",
              { class: "meta" },
              `${bytes(w.usedBytes)} used · ${bytes(free)} free of ${bytes(w.capacityBytes)} (headroom ${bytes(w.headroomBytes)}) · busy `,
              el("b", { "data-busy": w.busyFraction.toFixed(3) }, percent(w.busyFraction)),
              ` · batch ${w.batchSize > 0 ? num(w.batchSize) : "–"}`,
            ),
            el(
              "ul",
              { class: "copies" },
              ...w.copies.map((c) =>
                el(
                  "li",
                  { "data-model": c.id, "data-state": c.state },
                  el("span", { class: `dot ${c.state}` }),
                  el("span", { class: "name", title: c.id }, c.id),
                  el("span", { class: `tag ${c.state}` }, c.state),
                  c.pinned && el("span", { class: "tag pinned" }, "pinned"),
                  el("span", { class: "num" }, bytes(c.memoryBytes)),
                  el("span", { class: "num" }, `busy ${percent(c.busyFraction)}`),
                ),
              ),
              w.copies.length === 0 && el("li", { class: "empty" }, "no models"),
            ),
          );
        }),
      ),
    );
  });
}

/** @param {Snapshot} s */
export function queuesView(s) {
  const rows = s.queues.map((q) => {
    const depth = q.waiting + q.held;
    return el(
      "tr",
      { "data-queue": q.id, "data-depth": depth },
      el("th", { scope: "row" }, q.id),
      el("td", { class: "num" }, depth),
      el("td", { class: "num" }, q.waiting),
      el("td", { class: "num" }, q.held),
      el("td", {}, q.buckets.map((b) => `≤${b.bucket}: ${b.messages}`).join(" · ") || "–"),
      el("td", { class: "num" }, q.oldestAgeS === undefined ? "–" : `${num(q.oldestAgeS)} s`),
      el("td", { class: "num" }, num(q.arrivalsPerS)),
      el("td", { class: "num" }, num(q.completionsPerS)),
      el("td", { class: "num" }, q.putBacks),
      el("td", { class: `num${q.deadLetters > 0 ? " bad" : ""}` }, q.deadLetters),
      el(
        "td",
        { class: "sparks" },
        sparkline(q.history.depth, "depth"),
        sparkline(q.history.arrivals, "arrivals/s"),
        sparkline(q.history.completions, "completions/s"),
      ),
    );
  });
  return [
    el("h2", {}, "Work queues"),
    el(
      "p",
      { class: "hint" },
      "Depth counts unfinished JetStream messages (a message may carry several requests). Arrivals come from ingress's metrics, completions from the workers' heartbeats (items a second). Sparklines: depth, arrivals, completions over two minutes.",
    ),
    table(
      [
        "model",
        "depth#",
        "waiting#",
        "held#",
        "by length bucket",
        "oldest#",
        "arrivals/s#",
        "done/s#",
        "put back#",
        "dead letters#",
        "last 2 min",
      ],
      rows,
    ),
  ];
}

/** @param {Snapshot} s */
export function modelsView(s) {
  const models = s.models.map((m) =>
    el(
      "tr",
      { "data-catalog": m.id },
      el("th", { scope: "row" }, m.id),
      el("td", {}, m.family),
      el("td", {}, m.pinned ? "pinned" : ""),
      el("td", { title: m.statusMessage ?? "" }, m.status ?? "–"),
      el("td", {}, m.copies.map((c) => `${c.worker}@${c.node} (${c.state})`).join(", ") || "none"),
      el(
        "td",
        {},
        m.adapters
          .map(
            (a) =>
              `${a.name} v${a.versions.join(",")} · ${a.owner}${a.sharedWith.length > 0 ? ` + ${a.sharedWith.join(", ")}` : ""}`,
          )
          .join("; ") || "–",
      ),
    ),
  );
  const events = s.events.map((e) =>
    el(
      "tr",
      {},
      el("td", {}, new Date(e.at).toLocaleTimeString()),
      el("td", {}, e.id),
      el("td", {}, `${e.worker}@${e.node}`),
      el("td", {}, el("span", { class: `tag ${e.kind}` }, e.kind)),
      el(
        "td",
        { class: "num" },
        e.durationMs === undefined
          ? ""
          : e.kind === "resident"
            ? `loaded in ${num(e.durationMs / 1000, 2)} s`
            : `after ${num(e.durationMs / 1000)} s`,
      ),
    ),
  );
  return [
    el("h2", {}, "Catalog"),
    table(
      [
        "model",
        "family",
        "",
        "state (model-loader)",
        "copies",
        "adapters (versions · owner + shared)",
      ],
      models,
    ),
    el("h2", {}, "Loads and evictions"),
    events.length === 0
      ? el("p", { class: "empty" }, "None since the console started.")
      : table(["time", "model", "worker", "event", "#"], events),
  ];
}

/** @param {Snapshot} s */
export function requestsView(s) {
  const r = s.requests;
  /** @param {import("../src/snapshot.js").Percentiles} p */
  const cells = (p) => [
    el("td", { class: "num" }, p.count),
    el("td", { class: "num" }, num(p.p50Ms)),
    el("td", { class: "num" }, num(p.p90Ms)),
    el("td", { class: "num" }, num(p.p99Ms)),
  ];
  const rows = r.phases.map((p) =>
    el("tr", { "data-phase": p.phase }, el("th", { scope: "row" }, p.phase), ...cells(p)),
  );
  const models = r.models.map((m) =>
    el("tr", { "data-latency-model": m.model }, el("th", { scope: "row" }, m.model), ...cells(m)),
  );
  const slow = r.slow.map((q) =>
    el(
      "li",
      {},
      el(
        "a",
        { href: q.url, target: "_blank", rel: "noopener noreferrer" },
        `${num(q.durationMs)} ms`,
      ),
      ` ${q.name} · ${new Date(q.at).toLocaleTimeString()} · trace ${q.traceId}`,
    ),
  );
  return [
    el("h2", {}, `Latency by phase over the last ${r.windowS} s (ms)`),
    el(
      "p",
      { class: "hint" },
      "From ingress's histograms, interpolated within their buckets as Prometheus does. Phases are those of every answer's Server-Timing header.",
    ),
    table(["phase", "requests#", "p50#", "p90#", "p99#"], rows),
    el("h2", {}, "Whole requests by model"),
    models.length === 0
      ? el("p", { class: "empty" }, "No requests in the window.")
      : table(["model", "requests#", "p50#", "p90#", "p99#"], models),
    el("h2", {}, "Slowest traced requests"),
    s.sources.traces.state === "off"
      ? el(
          "p",
          { class: "empty" },
          "No trace backend configured (SHOAL_CONSOLE_TRACES_URL; npm run traces).",
        )
      : slow.length === 0
        ? el("p", { class: "empty" }, "No traced request in the window.")
        : el("ol", { class: "slow" }, ...slow),
  ];
}

/** @param {Snapshot} s */
export function benchmarksView(s) {
  if (s.benchmarks.length === 0) {
    return [el("p", { class: "empty" }, "No bench or autotune results found.")];
  }
  // Knee charts first (newest first), then the results that have none, as one table.
  const charted = s.benchmarks.filter((b) => b.charts.length > 0);
  const plain = s.benchmarks.filter((b) => b.charts.length === 0);
  /** @param {Readonly<Record<string, number>>} h */
  const headline = (h) =>
    Object.entries(h)
      .map(([k, v]) => `${k} ${num(v, 2)}`)
      .join(" · ");
  return [
    ...charted.map((b) =>
      el(
        "article",
        { class: "bench", "data-bench": b.file },
        el("h2", {}, b.file, b.scenario !== undefined && el("span", { class: "tag" }, b.scenario)),
        el(
          "p",
          { class: "meta" },
          `written ${new Date(b.modifiedAt).toLocaleString()} · ${headline(b.headline)}`,
        ),
        el(
          "div",
          { class: "charts" },
          ...b.charts.map((c) => el("img", { src: `/bench/${c}`, alt: `chart ${c}` })),
        ),
      ),
    ),
    plain.length > 0 && el("h2", {}, "Results without charts"),
    plain.length > 0 &&
      table(
        ["result", "scenario", "written", "figures"],
        plain.map((b) =>
          el(
            "tr",
            { "data-bench": b.file },
            el("th", { scope: "row" }, b.file),
            el("td", {}, b.scenario ?? ""),
            el("td", {}, new Date(b.modifiedAt).toLocaleString()),
            el("td", {}, headline(b.headline)),
          ),
        ),
      ),
  ].filter((n) => n !== false);
}
