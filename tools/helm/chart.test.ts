/**
 * The Helm chart (deploy/helm/shoal), checked offline: `helm lint --strict`, its rendering
 * validated strictly against the Kubernetes schemas of the oldest and newest versions it
 * supports and KEDA's own CRD (validate-rendered.py), what every container must carry, and
 * values that make no sense failing at `helm template` with a message naming the value.
 * helm, kubernetes-validate and KEDA's CRDs come from tools/setup/helm.sh.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MissingPrerequisiteError, repoRoot, shoalHome, tempDir } from "@shoal/testing";
import { beforeAll, describe, expect, it } from "vitest";

const root = repoRoot();
const chart = join(root, "deploy/helm/shoal");
const helm = process.env["SHOAL_HELM"] ?? join(shoalHome(), "bin/helm");
const venv = process.env["SHOAL_K8S_VENV"] ?? join(shoalHome(), "venv-k8s");
const crds = process.env["SHOAL_KEDA_CRDS"] ?? join(shoalHome(), "keda-crds");
const python = join(venv, "bin/python");
/** The oldest and newest Kubernetes the chart is checked against. */
const VERSIONS = ["1.29.0", "1.37.0"];
const SECRET = ["--set", "nats.auth.existingSecret=shoal-nats-auth"];

interface K8sObject {
  kind: string;
  metadata: { name: string };
  spec?: Record<string, unknown>;
}
interface Container {
  name: string;
  image: string;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  livenessProbe?: unknown;
  readinessProbe?: unknown;
  securityContext?: { allowPrivilegeEscalation?: boolean };
  env?: { name: string; value?: string }[];
}
interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean };
  terminationGracePeriodSeconds?: number;
}

let dir: string;

function template(args: readonly string[]): { status: number; stdout: string; stderr: string } {
  const run = spawnSync(helm, ["template", "shoal", chart, ...args], { encoding: "utf8" });
  return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
}

/** Renders, validates against the schemas, and returns the objects. */
function renderValid(args: readonly string[], name: string): K8sObject[] {
  const rendered = template(args);
  expect(rendered.stderr).toBe("");
  expect(rendered.status).toBe(0);
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, rendered.stdout);
  const check = spawnSync(
    python,
    [join(root, "tools/helm/validate-rendered.py"), file, crds, ...VERSIONS],
    { encoding: "utf8" },
  );
  expect(check.stdout).toMatch(/objects, 0 failed$/m);
  expect(check.status).toBe(0);
  const json = execFileSync(
    python,
    [
      "-c",
      "import json,sys,yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))",
      file,
    ],
    { encoding: "utf8" },
  );
  return JSON.parse(json) as K8sObject[];
}

function podSpec(o: K8sObject): PodSpec | undefined {
  const template = o.spec?.["template"] as { spec?: PodSpec } | undefined;
  return template?.spec;
}

beforeAll(async () => {
  for (const [what, path, envVar] of [
    ["helm", helm, "SHOAL_HELM"],
    ["kubernetes-validate's virtualenv", python, "SHOAL_K8S_VENV"],
    ["KEDA's CRDs", join(crds, "keda.sh_scaledobjects.yaml"), "SHOAL_KEDA_CRDS"],
  ] as const) {
    if (!existsSync(path)) {
      throw new MissingPrerequisiteError(
        what,
        path,
        envVar,
        "bash tools/setup/helm.sh installs it",
      );
    }
  }
  dir = await tempDir("helm");
});

describe("the Helm chart", () => {
  it("passes helm lint --strict", () => {
    const lint = spawnSync(helm, ["lint", "--strict", chart, ...SECRET], { encoding: "utf8" });
    expect(lint.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(lint.status).toBe(0);
  });

  it("renders, with the defaults, objects valid for Kubernetes 1.29 to 1.37 and KEDA", () => {
    const objects = renderValid(SECRET, "defaults");
    const kinds = (kind: string): string[] =>
      objects.filter((o) => o.kind === kind).map((o) => o.metadata.name);
    expect(kinds("StatefulSet")).toEqual(["shoal-nats"]);
    expect(kinds("Deployment").sort()).toEqual([
      "shoal-blob-offloader",
      "shoal-console",
      "shoal-ingress",
      "shoal-lora-registry",
      "shoal-worker-cpu",
    ]);
    expect(kinds("ScaledObject")).toEqual(["shoal-worker-cpu"]);
    expect(kinds("HorizontalPodAutoscaler")).toEqual(["shoal-ingress"]);
    expect(kinds("PodDisruptionBudget").sort()).toEqual([
      "shoal-ingress",
      "shoal-nats",
      "shoal-worker-cpu",
    ]);
    expect(kinds("Job")).toEqual(["shoal-bootstrap-1"]);
    // The console has no login: no Service, and it listens on its pod's loopback.
    expect(kinds("Service")).not.toContain("shoal-console");
    const consolePod = podSpec(
      objects.find(
        (o) => o.kind === "Deployment" && o.metadata.name === "shoal-console",
      ) as K8sObject,
    );
    const consoleEnv = consolePod?.containers[0]?.env ?? [];
    expect(consoleEnv.map((e) => e.name)).not.toContain("SHOAL_CONSOLE_HOST");
    expect(consoleEnv).toContainEqual({ name: "NATS_USER", value: "console" });

    const nats = objects.find((o) => o.kind === "StatefulSet");
    expect(nats?.spec?.["replicas"]).toBe(3);
    const config = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "shoal-nats");
    const conf = (config as { data?: Record<string, string> } | undefined)?.data?.["nats.conf"];
    expect(conf).toContain("shoal-nats-2.shoal-nats-headless:6222");
    const bootstrap = podSpec(objects.find((o) => o.kind === "Job") as K8sObject);
    const env = bootstrap?.containers[0]?.env ?? [];
    expect(env).toContainEqual({ name: "SHOAL_STREAM_REPLICAS", value: "3" });
    const nats0 = env.find((e) => e.name === "NATS_URL")?.value ?? "";
    expect(nats0.split(",")).toHaveLength(3);

    const scaled = objects.find((o) => o.kind === "ScaledObject");
    expect(scaled?.spec?.["minReplicaCount"]).toBe(0);
    expect(scaled?.spec?.["triggers"]).toEqual([
      {
        type: "nats-jetstream",
        metadata: expect.objectContaining({
          stream: "SHOAL_WORK",
          consumer: "work-all-minilm-l6-v2",
          account: "$G",
        }) as unknown,
      },
    ]);
  });

  it("gives every Shoal container probes, resources, no privileges, and a non-root pod", () => {
    const objects = renderValid(SECRET, "containers");
    for (const o of objects.filter((x) => ["Deployment", "StatefulSet", "Job"].includes(x.kind))) {
      const pod = podSpec(o);
      expect(pod?.securityContext?.runAsNonRoot, o.metadata.name).toBe(true);
      for (const c of pod?.containers ?? []) {
        const where = `${o.metadata.name}/${c.name}`;
        expect(c.resources?.requests, where).toBeDefined();
        expect(c.resources?.limits?.["memory"], where).toBeDefined();
        expect(c.securityContext?.allowPrivilegeEscalation, where).toBe(false);
        if (o.kind !== "Job") {
          expect(c.livenessProbe, where).toBeDefined();
          expect(c.readinessProbe, where).toBeDefined();
        }
      }
    }
    const worker = podSpec(
      objects.find(
        (o) => o.kind === "Deployment" && o.metadata.name === "shoal-worker-cpu",
      ) as K8sObject,
    );
    expect(worker?.terminationGracePeriodSeconds).toBe(60);
    expect(worker?.containers.map((c) => c.name)).toEqual(["worker", "model-loader"]);
  });

  it("renders a CUDA pool with its GPUs, the catalog and bundles as ConfigMaps, and TLS", () => {
    const values = join(dir, "gpu-values.json");
    writeFileSync(
      values,
      JSON.stringify({
        nats: { auth: { existingSecret: "nats-auth" } },
        catalog: { models: [{ id: "m", key: "m" }] },
        bundles: { cuda: { profile: "cuda" } },
        console: { open: true, ingressMetrics: ["http://shoal-ingress-ops:9400/metrics"] },
        ingress: {
          tlsSecret: "ingress-tls",
          autoscaling: { enabled: false, minReplicas: 2, maxReplicas: 2 },
        },
        workers: [
          {
            name: "h100",
            models: ["all-minilm-l6-v2", "smollm2-135m-instruct"],
            memoryBytes: 80e9,
            device: "cuda",
            gpus: 1,
            replicas: 2,
            resources: { requests: { cpu: "4", memory: "16Gi" }, limits: { memory: "32Gi" } },
            nodeSelector: { "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3" },
            tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
            terminationGracePeriodSeconds: 120,
            autoscaling: {
              enabled: true,
              minReplicas: 1,
              maxReplicas: 4,
              lagThreshold: 256,
              cooldownSeconds: 600,
            },
            pdb: { maxUnavailable: 1 },
          },
        ],
      }),
    );
    const objects = renderValid(["-f", values], "gpu");
    const pool = podSpec(
      objects.find(
        (o) => o.kind === "Deployment" && o.metadata.name === "shoal-worker-h100",
      ) as K8sObject,
    );
    const worker = pool?.containers.find((c) => c.name === "worker");
    expect(worker?.image).toBe("localhost/shoal/shoal-worker-cuda:0.2.0");
    expect(worker?.resources?.limits?.["nvidia.com/gpu"]).toBe(1);
    expect(worker?.env).toContainEqual({ name: "SHOAL_DEVICE", value: "cuda:0" });
    expect(worker?.env).toContainEqual({
      name: "SHOAL_BUNDLE",
      value: "/etc/shoal/bundles/cuda.json",
    });
    expect(worker?.env).toContainEqual({ name: "SHOAL_WORKER_MEMORY_BYTES", value: "80000000000" });
    const loader = pool?.containers.find((c) => c.name === "model-loader");
    expect(loader?.env).toContainEqual({
      name: "SHOAL_NODE_MODELS",
      value: "all-minilm-l6-v2,smollm2-135m-instruct",
    });
    const scaled = objects.find((o) => o.kind === "ScaledObject");
    expect((scaled?.spec?.["triggers"] as unknown[]).length).toBe(2);
    expect(objects.filter((o) => o.kind === "HorizontalPodAutoscaler")).toEqual([]);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      expect.arrayContaining([
        "ConfigMap/shoal-catalog",
        "ConfigMap/shoal-bundles",
        "Service/shoal-console",
      ]),
    );
    const console = podSpec(
      objects.find(
        (o) => o.kind === "Deployment" && o.metadata.name === "shoal-console",
      ) as K8sObject,
    )?.containers[0];
    expect(console?.env).toEqual(
      expect.arrayContaining([
        { name: "SHOAL_CONSOLE_HOST", value: "0.0.0.0" },
        { name: "SHOAL_CONSOLE_OPEN", value: "1" },
        { name: "SHOAL_CONSOLE_INGRESS_METRICS", value: "http://shoal-ingress-ops:9400/metrics" },
      ]),
    );
  });

  it.each([
    [["--set", "nats.auth.existingSecret="], "nats.auth.existingSecret is required"],
    [["--set", "nats.replicas=1"], "nats.streamReplicas (3) exceeds nats.replicas (1)"],
    [["--set", "nats.replicas=0"], "at '/nats/replicas': value must be one of 1, 3, 5"],
    [["--set", "nats.streamReplicas=2"], "at '/nats/streamReplicas'"],
    [["--set", "console.tracesUrl=ftp://jaeger"], "at '/console/tracesUrl'"],
    [
      ["--set-json", 'workers=[{"name":"a","memoryBytes":1,"device":"cpu","replicas":1}]'],
      "models",
    ],
    [
      [
        "--set-json",
        'workers=[{"name":"a","models":[],"memoryBytes":1,"device":"cpu","replicas":1}]',
      ],
      "models",
    ],
    [
      ["--set-json", 'workers=[{"name":"a","models":["m1"],"device":"cpu","replicas":1}]'],
      "memoryBytes",
    ],
    [
      [
        "--set-json",
        'workers=[{"name":"a","models":["m1"],"memoryBytes":1,"device":"cuda","gpus":0,"replicas":1,"autoscaling":{"enabled":false,"minReplicas":0,"maxReplicas":1},"pdb":{"maxUnavailable":1}}]',
      ],
      "workers[0] (a): device cuda needs gpus of at least 1",
    ],
    [["--set", "workers[0].name=Bad_Name"], "at '/workers/0/name': 'Bad_Name' does not match"],
    [["--set", "ingress.autoscaling.minReplicas=20"], "ingress.autoscaling.minReplicas exceeds"],
    [["--set", "auth.mode=open"], "at '/auth/mode'"],
  ])("refuses %j, naming the value (%s)", (args, message) => {
    const rendered = template([...SECRET, ...args]);
    expect(rendered.status).not.toBe(0);
    expect(rendered.stderr).toContain(message);
  });
});
