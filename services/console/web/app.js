import { ago, el } from "./draw.js";
import { benchmarksView, fleetView, modelsView, queuesView, requestsView } from "./views.js";

/** @typedef {import("../src/snapshot.js").ConsoleSnapshot} Snapshot */

const VIEWS = {
  fleet: fleetView,
  queues: queuesView,
  models: modelsView,
  requests: requestsView,
  benchmarks: benchmarksView,
};

/** @type {Snapshot | undefined} */
let latest;
/** When the page last heard from the console. */
let heardAt = 0;

function current() {
  const name = location.hash.slice(1);
  return name in VIEWS ? /** @type {keyof typeof VIEWS} */ (name) : "fleet";
}

function draw() {
  const name = current();
  for (const section of document.querySelectorAll("[data-view]")) {
    section.toggleAttribute("hidden", section.id !== name);
  }
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === `#${name}`);
  }
  if (latest === undefined) return;
  const section = document.getElementById(name);
  // Redraw only the view in sight; the others are drawn when chosen.
  section?.replaceChildren(...VIEWS[name](latest));
  drawSources(latest);
}

/** @param {Snapshot} s */
function drawSources(s) {
  const badges = Object.entries(s.sources).map(([name, src]) =>
    el(
      "span",
      {
        class: `badge ${src.state}`,
        "data-source": name,
        "data-state": src.state,
        title: src.detail,
      },
      `${name}: ${src.state === "ok" ? "ok" : src.state === "off" ? "off" : "unreachable"}`,
    ),
  );
  document.getElementById("sources")?.replaceChildren(...badges);
  const nats = s.sources.nats;
  const banner = /** @type {HTMLElement} */ (document.getElementById("banner"));
  document.querySelector("main")?.classList.toggle("stale-data", nats.state === "down");
  if (nats.state === "down") {
    banner.hidden = false;
    banner.dataset["reason"] = "nats";
    banner.textContent = `NATS is unreachable (${nats.detail})${
      nats.lastOkAt === undefined ? "" : `; figures are from ${ago(s.at - nats.lastOkAt)}`
    }. The console reconnects by itself.`;
  } else if (banner.dataset["reason"] === "nats") {
    banner.hidden = true;
    banner.dataset["reason"] = "";
  }
}

function connect() {
  const events = new EventSource("/events");
  events.addEventListener("snapshot", (e) => {
    latest = JSON.parse(/** @type {MessageEvent<string>} */ (e).data);
    heardAt = Date.now();
    const banner = /** @type {HTMLElement} */ (document.getElementById("banner"));
    if (banner.dataset["reason"] === "console") {
      banner.hidden = true;
      banner.dataset["reason"] = "";
    }
    draw();
  });
  // EventSource reconnects by itself; the banner says so meanwhile.
  events.addEventListener("error", () => {
    showConsoleLost();
  });
}

function showConsoleLost() {
  const banner = /** @type {HTMLElement} */ (document.getElementById("banner"));
  banner.hidden = false;
  banner.dataset["reason"] = "console";
  banner.textContent = "Lost the console's live feed; reconnecting…";
}

// A feed that stalls without closing (a proxy holding the connection) shows too.
setInterval(() => {
  if (heardAt !== 0 && Date.now() - heardAt > 5_000) showConsoleLost();
}, 1_000);
addEventListener("hashchange", draw);
draw();
connect();
