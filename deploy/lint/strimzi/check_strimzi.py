#!/usr/bin/env python3
"""Validate Strimzi custom resources offline against Strimzi's own CRD schemas.

kubernetes-validate bundles only the built-in Kubernetes schemas, and Strimzi's CRDs are
published neither in a package registry nor as a release artifact that CI can fetch, so the
schemas of the kinds the example uses are vendored here (schemas-<version>.json), extracted
from the `install/cluster-operator/04*-Crd-*.yaml` files of one Strimzi release by `extract`.

Validation is stricter than the API server's default: every object schema that lists its
properties and does not preserve unknown fields rejects other fields (the API server would
prune them silently, or warn), so a misspelt `listners` fails here. CEL rules
(x-kubernetes-validations) are not evaluated.

    check_strimzi.py extract CRD_DIR VERSION OUT.json   refresh the vendored schemas
    check_strimzi.py check SCHEMAS.json FILE...         validate every Strimzi object in FILEs
    check_strimzi.py example RENDERED.yaml FILE...      the rendered gateway chart and the
                                                        Strimzi files agree (names, ports,
                                                        listener security, ACLs)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import yaml

# The kinds the example deploys: the cluster, its node pool and kadmit's principal.
CRD_FILES = ["040-Crd-kafka.yaml", "045-Crd-kafkanodepool.yaml", "044-Crd-kafkauser.yaml"]


def strip(node):
    """The schema without its prose, which is most of its size and never validates."""
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def extract(crd_dir: Path, version: str, out: Path) -> None:
    schemas = {}
    for name in CRD_FILES:
        crd = yaml.safe_load((crd_dir / name).read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if v.get("served"):
                schemas[f"{group}/{v['name']}/{kind}"] = strip(v["schema"]["openAPIV3Schema"])
    doc = {"strimzi": version, "source": "install/cluster-operator/" + ", ".join(CRD_FILES),
           "schemas": schemas}
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{out}: {len(schemas)} schemas from Strimzi {version}")


def strict(node):
    """Close every object schema that names its properties (see the module's comment)."""
    if isinstance(node, list):
        return [strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) for k, v in node.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def check(schemas_file: Path, files: list[Path]) -> int:
    vendored = json.loads(schemas_file.read_text())
    schemas = {key: strict(s) for key, s in vendored["schemas"].items()}
    problems, seen = [], 0
    for f in files:
        for doc in yaml.safe_load_all(f.read_text()):
            if not doc or not str(doc.get("apiVersion", "")).endswith("strimzi.io/v1"):
                if doc and "strimzi.io/" in str(doc.get("apiVersion", "")):
                    problems.append(f"{f}: {doc.get('kind')}: apiVersion {doc['apiVersion']} "
                                    f"is not served by Strimzi {vendored['strimzi']}")
                continue
            key = f"{doc['apiVersion']}/{doc.get('kind')}"
            name = (doc.get("metadata") or {}).get("name")
            if key not in schemas:
                problems.append(f"{f}: {key}: no vendored schema for this kind")
                continue
            if not name:
                problems.append(f"{f}: {key}: metadata.name missing")
            seen += 1
            validator = jsonschema.Draft7Validator(schemas[key])
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
                path = ".".join(str(p) for p in e.absolute_path) or "(root)"
                problems.append(f"{f}: {doc['kind']}/{name} {path}: {e.message}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"{seen} Strimzi objects valid against Strimzi {vendored['strimzi']}'s CRD schemas")
    return 0 if seen else 1


# What kadmit's principal must be granted (docs/admission.md, docs/deploy.md).
NEEDED_ACLS = {
    ("topic", "__kadmit_ledger"): {"Read", "Write", "Describe", "Create"},
    ("topic", "__kadmit_limits"): {"Read", "Write", "Describe", "Create"},
    ("topic", "*"): {"Describe"},
    ("cluster", None): {"Describe", "DescribeConfigs"},
}


def example(rendered: Path, files: list[Path]) -> int:
    """The gateway values were written for these Strimzi resources: check that they match,
    since a mismatch (another cluster name, the wrong listener port, a missing broker id)
    renders and validates cleanly and fails only in the cluster."""
    objs = [d for f in [rendered, *files] for d in yaml.safe_load_all(f.read_text()) if d]
    by_kind: dict[str, list[dict]] = {}
    for d in objs:
        by_kind.setdefault(d["kind"], []).append(d)
    problems = []
    try:
        (kafka,), (user,), (deploy,), pools = (by_kind["Kafka"], by_kind["KafkaUser"],
                                               by_kind["Deployment"], by_kind["KafkaNodePool"])
    except (KeyError, ValueError):
        print("example: needs one Kafka, one KafkaUser, one Deployment and node pools; got "
              + ", ".join(f"{k} x{len(v)}" for k, v in sorted(by_kind.items())), file=sys.stderr)
        return 1
    cluster, ns = kafka["metadata"]["name"], kafka["metadata"].get("namespace", "default")
    pod = deploy["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}

    upstream = [a.strip() for a in env["KADMIT_UPSTREAM"].split(",")]
    listeners = {lst["port"]: lst for lst in kafka["spec"]["kafka"]["listeners"]}
    for a in upstream:
        host, _, port = a.rpartition(":")
        if host not in (f"{cluster}-kafka-bootstrap.{ns}.svc",
                        f"{cluster}-kafka-bootstrap.{ns}.svc.cluster.local"):
            problems.append(f"KADMIT_UPSTREAM {a}: not the bootstrap Service of Kafka {cluster} "
                            f"in {ns}")
        lst = listeners.get(int(port)) if port.isdigit() else None
        if lst is None:
            problems.append(f"KADMIT_UPSTREAM {a}: Kafka {cluster} has no listener on {port}")
            continue
        if bool(lst.get("tls")) != (env.get("KADMIT_UPSTREAM_TLS") == "true"):
            problems.append(f"listener {lst['name']}: tls {lst.get('tls')} but "
                            f"KADMIT_UPSTREAM_TLS {env.get('KADMIT_UPSTREAM_TLS')}")
        auth = (lst.get("authentication") or {}).get("type")
        mech = env.get("KADMIT_METADATA_SASL_MECHANISM")
        if auth and auth.startswith("scram-sha-") and mech != auth.upper():
            problems.append(f"listener {lst['name']}: authentication {auth} but kadmit's "
                            f"mechanism {mech}")
        labels = pod["metadata"]["labels"]
        for peer in lst.get("networkPolicyPeers") or []:
            want = (peer.get("podSelector") or {}).get("matchLabels") or {}
            if any(labels.get(k) != v for k, v in want.items()):
                problems.append(f"listener {lst['name']}: networkPolicyPeers {want} do not "
                                f"select the gateway pods {labels}")
            # A podSelector alone selects pods of the Kafka's own namespace only.
            advertised = env.get("KADMIT_ADVERTISE_HOST", "")
            if "namespaceSelector" not in peer and not advertised.endswith(f".{ns}.svc"):
                problems.append(f"listener {lst['name']}: networkPolicyPeers admit pods of "
                                f"namespace {ns} only, but the gateway advertises {advertised}")

    ca = volumes.get("upstream-ca", {}).get("secret", {}).get("secretName")
    if ca != f"{cluster}-cluster-ca-cert":
        problems.append(f"upstream CA Secret {ca}: Strimzi's cluster CA is {cluster}-cluster-ca-cert")
    creds = volumes.get("kafka-credentials", {}).get("secret", {}).get("secretName")
    uname = user["metadata"]["name"]
    if creds != uname or env.get("KADMIT_METADATA_SASL_USERNAME") != uname:
        problems.append(f"kadmit logs in as {env.get('KADMIT_METADATA_SASL_USERNAME')} with "
                        f"Secret {creds}; the KafkaUser (and its Secret) is {uname}")
    if user["metadata"].get("labels", {}).get("strimzi.io/cluster") != cluster:
        problems.append(f"KafkaUser {uname} is not labelled strimzi.io/cluster: {cluster}")
    granted: dict[tuple, set] = {}
    for acl in user["spec"].get("authorization", {}).get("acls", []):
        r = acl["resource"]
        key = (r["type"], r.get("name"))
        granted.setdefault(key, set()).update(acl.get("operations") or [acl.get("operation")])
    for key, ops in NEEDED_ACLS.items():
        if not ops <= granted.get(key, set()):
            problems.append(f"KafkaUser {uname}: {key[0]} {key[1] or ''} lacks "
                            f"{sorted(ops - granted.get(key, set()))}")

    ports = {p["name"] for p in container["ports"]}
    for pool in pools:
        if "broker" not in pool["spec"].get("roles", []):
            continue
        ids = range(pool["spec"]["replicas"])  # Strimzi numbers a lone pool's nodes 0..n-1
        missing = [i for i in ids if f"broker-{i}" not in ports]
        if missing:
            problems.append(f"node pool {pool['metadata']['name']}: broker ids {missing} have "
                            "no gateway port (gateway.brokerIds)")
    for p in problems:
        print(f"example: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"example: the gateway values match Kafka {cluster} ({len(upstream)} bootstrap, "
          f"listener security, CA, KafkaUser {uname} and its ACLs, broker ports)")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[1] == "extract":
        extract(Path(argv[2]), argv[3], Path(argv[4]))
        return 0
    if len(argv) >= 4 and argv[1] == "check":
        return check(Path(argv[2]), [Path(a) for a in argv[3:]])
    if len(argv) >= 4 and argv[1] == "example":
        return example(Path(argv[2]), [Path(a) for a in argv[3:]])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
