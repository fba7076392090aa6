"""The Helm chart (deploy/helm/kadmit) and the Kustomize base (deploy/kubernetes) describe the
same deployment: with the chart's default values, `helm template` renders the same objects as
`kustomize build`, field by field. The comparison is structural (objects keyed by kind and name,
lists of named items keyed by name, JSON policy documents parsed), so a change on one side, such
as a broker listener setting in the StatefulSet, is reported as the field path that differs, with
both values, rather than as an opaque text diff or not at all. Only Helm's own bookkeeping labels
are set aside.

Needs the pinned kustomize and helm that scripts/lint-deploy.sh builds into the tools cache
(${KADMIT_CACHE:-~/.cache/kadmit}/tools); no Kafka.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import yaml  # PyYAML: scripts/deps.sh installs it

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(os.environ.get("KADMIT_CACHE", Path.home() / ".cache" / "kadmit")) / "tools"
HELM_ONLY_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"}


def pinned(name: str) -> Path:
    """The tools cache's binary at the version lint-deploy.sh pins."""
    script = (ROOT / "scripts" / "lint-deploy.sh").read_text()
    version = re.search(rf"^{name}_version=(\S+)", script, re.M)
    assert version, f"lint-deploy.sh pins no {name}_version"
    path = TOOLS / f"{name}-{version.group(1)}"
    if not path.exists():
        pytest.fail(f"{path} missing: run scripts/lint-deploy.sh (it builds it once)",
                    pytrace=False)
    return path


def objects(text: str) -> dict[str, dict]:
    out = {}
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        key = f"{doc['kind']}/{doc['metadata']['name']}"
        assert key not in out, f"{key} rendered twice"
        labels = doc["metadata"].get("labels") or {}
        for label in HELM_ONLY_LABELS:
            labels.pop(label, None)
        if doc["kind"] == "ConfigMap":
            doc["data"] = {k: json.loads(v) if k.endswith(".json") else v
                           for k, v in (doc.get("data") or {}).items()}
        out[key] = doc
    return out


def named(items: list) -> bool:
    return bool(items) and all(isinstance(i, dict) and "name" in i for i in items)


def diff(a, b, path: str = "") -> list[str]:
    """Field paths where a (kustomize) and b (helm) differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append(f"{p}: only in kustomize ({json.dumps(a[k])[:200]})")
            elif k not in a:
                out.append(f"{p}: only in helm ({json.dumps(b[k])[:200]})")
            else:
                out += diff(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list) and named(a) and named(b):
        return diff({i["name"]: i for i in a}, {i["name"]: i for i in b}, path) + (
            [] if [i["name"] for i in a] == [i["name"] for i in b]
            else [f"{path}: order kustomize {[i['name'] for i in a]} helm {[i['name'] for i in b]}"])
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: kustomize {json.dumps(a)} != helm {json.dumps(b)}"]


def drift(kustomize_dir: Path) -> list[str]:
    k = subprocess.run([str(pinned("kustomize")), "build", str(kustomize_dir)],
                       capture_output=True, text=True, check=True, timeout=120).stdout
    h = subprocess.run([str(pinned("helm")), "template", "kadmit", str(ROOT / "deploy/helm/kadmit")],
                       capture_output=True, text=True, check=True, timeout=120).stdout
    ko, ho = objects(k), objects(h)
    out = [f"{key}: only in kustomize" for key in sorted(set(ko) - set(ho))]
    out += [f"{key}: only in helm" for key in sorted(set(ho) - set(ko))]
    for key in sorted(set(ko) & set(ho)):
        out += [f"{key} {d}" for d in diff(ko[key], ho[key])]
    return out


def test_helm_chart_renders_the_kustomize_base_objects():
    problems = drift(ROOT / "deploy" / "kubernetes")
    assert not problems, "the Helm chart and the Kustomize base drifted apart:\n" + "\n".join(
        problems)


def test_a_listener_change_in_the_base_is_reported_by_its_field_path(tmp_path):
    base = tmp_path / "kubernetes"
    shutil.copytree(ROOT / "deploy" / "kubernetes", base)
    sts = base / "statefulset.yaml"
    text = sts.read_text()
    assert "CLIENT://127.0.0.1:19092," in text
    sts.write_text(text.replace("CLIENT://127.0.0.1:19092,", "CLIENT://127.0.0.1:29092,", 1))
    problems = drift(base)
    assert len(problems) == 1, problems
    assert problems[0].startswith("StatefulSet/kafka spec.template.spec.containers.kafka.env."
                                  "KAFKA_LISTENERS.value: kustomize "), problems
    assert "29092" in problems[0] and "19092" in problems[0], problems
