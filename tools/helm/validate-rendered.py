"""Validates a rendered Helm chart (`helm template` output) offline.

    validate-rendered.py RENDERED.yaml KEDA_CRD_DIR K8S_VERSION...

Every built-in object is checked, strictly (no unknown fields), against the Kubernetes JSON
schemas `kubernetes-validate` ships for each version named; every KEDA object against the
openAPIV3Schema of KEDA's own CRD (keda.sh_<plural>.yaml in KEDA_CRD_DIR). Any other kind is
an error: nothing in the chart goes unchecked. Prints one line per object and exits 1 when
any failed, naming the object and the field.
"""

import sys

import jsonschema
import kubernetes_validate
import yaml

KEDA = {"ScaledObject": "keda.sh_scaledobjects.yaml"}


def keda_schema(crd_dir, kind):
    with open(f"{crd_dir}/{KEDA[kind]}", encoding="utf-8") as f:
        crd = yaml.safe_load(f)
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def main():
    rendered, crd_dir, *versions = sys.argv[1:]
    with open(rendered, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    failures = 0
    for doc in docs:
        what = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        try:
            if doc.get("apiVersion", "").startswith("keda.sh/"):
                jsonschema.validate(doc, keda_schema(crd_dir, doc["kind"]))
            else:
                for version in versions:
                    kubernetes_validate.validate(doc, version, strict=True)
            print(f"ok {what}")
        except (
            jsonschema.ValidationError,
            kubernetes_validate.ValidationError,
            kubernetes_validate.SchemaNotFoundError,
            kubernetes_validate.InvalidSchemaError,
            KeyError,
        ) as err:
            failures += 1
            message = getattr(err, "message", str(err))
            path = "/".join(str(p) for p in getattr(err, "path", []))
            print(f"FAIL {what}: {path}: {message}")
    print(f"{len(docs)} objects, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
