#!/usr/bin/env python3
"""Validates a Grafana dashboard JSON for kadmit, offline:

- it is a JSON object with the fields Grafana needs to import it (uid, title, schemaVersion,
  panels), unique panel ids and panels that do not overlap on the 24-column grid;
- every target's expression is valid PromQL: with the dashboard variables replaced, the
  expressions are written as recording rules and `promtool check rules` parses them;
- every metric the dashboard queries is one kadmit exports (named in docs/metrics.md), so a
  renamed metric cannot leave a silently empty panel.

  check_dashboard.py DASHBOARD.json METRICS.md [PROMTOOL]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile

VARIABLES = {"$__rate_interval": "5m", "$__range": "1h", "$__interval": "1m",
             "$instance": ".*", "$job": ".*", "${datasource}": "prometheus"}
METRIC = re.compile(r"\b((?:kadmit|process)_[a-z0-9_]+)")
SUFFIXES = ("_bucket", "_sum", "_count")


def fail(msg: str) -> None:
    print(f"check_dashboard: {msg}", file=sys.stderr)
    sys.exit(1)


def documented(metrics_md: str) -> set[str]:
    names = set(re.findall(r"`((?:kadmit|process)_[a-z0-9_]+)", metrics_md))
    return names


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        fail(__doc__.strip().splitlines()[-1].strip())
    path, metrics_md = argv[1], argv[2]
    promtool = argv[3] if len(argv) == 4 else "promtool"
    with open(path) as f:
        dash = json.load(f)
    for key in ("uid", "title", "schemaVersion", "panels"):
        if key not in dash:
            fail(f"{path}: no {key}")
    ids, cells, exprs = set(), {}, []
    for p in dash["panels"]:
        if p.get("id") in ids:
            fail(f"{path}: panel id {p.get('id')} twice")
        ids.add(p.get("id"))
        g = p.get("gridPos") or fail(f"{path}: panel {p['id']} has no gridPos")
        if g["x"] < 0 or g["x"] + g["w"] > 24:
            fail(f"{path}: panel {p['id']} is outside the 24-column grid")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    fail(f"{path}: panels {cells[(x, y)]} and {p['id']} overlap")
                cells[(x, y)] = p["id"]
        if p["type"] == "row":
            continue
        if not p.get("targets"):
            fail(f"{path}: panel {p['id']} ({p['title']}) has no query")
        exprs += [(p["title"], t["expr"]) for t in p["targets"]]
    with open(metrics_md) as f:
        known = documented(f.read())
    for title, expr in exprs:
        for name in METRIC.findall(expr):
            base = next((name[:-len(s)] for s in SUFFIXES if name.endswith(s)
                         and name[:-len(s)] in known), name)
            if base not in known:
                fail(f"{path}: panel '{title}' queries {name}, which kadmit does not export")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as rules:
        doc = {"groups": [{"name": "dashboard", "rules": []}]}
        for i, (_, expr) in enumerate(exprs):
            for var, value in VARIABLES.items():
                expr = expr.replace(var, value)
            doc["groups"][0]["rules"].append({"record": f"dashboard:expr{i}", "expr": expr})
        json.dump(doc, rules)  # JSON is YAML
        rules.flush()
        p = subprocess.run([promtool, "check", "rules", rules.name], capture_output=True,
                           text=True)
        if p.returncode != 0:
            fail(f"{path}: an expression is not valid PromQL:\n{p.stdout}{p.stderr}")
    print(f"{path}: {len(dash['panels'])} panels, {len(exprs)} queries valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
