"""docs/policy.schema.json against kadmit's own validator.

Every example policy (docs/examples/*.json and the policy block in README.md) must be valid
for the schema and for `kadmit --check-policy`; a set of broken documents must be refused by
both. A disagreement means the schema (or the docs) drifted from the code.

usage: test_policy_schema.py KADMIT_BINARY
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import jsonschema
except ImportError:
    print("SKIP: python3 jsonschema is missing (scripts/deps.sh installs it)")
    sys.exit(77)

ROOT = Path(__file__).resolve().parents[3]

BROKEN = [
    {"max.broker.partitions": -3},
    {"max.broker.partitions": 2147483648},
    {"max.broker.partition": 5},
    {"brokers": {"07": {"max.broker.partitions": 1}}},
    {"brokers": {"2147483648": {"max.broker.partitions": 1}}},
    {"brokers": {"1": {}}},
    {"brokers": {"1": {"max.broker.partitions": 1, "rack": "a"}}},
    {"enforcement": "strict"},
    {"reject.error.code": 41},
    {"reject.error.code": 0},
    {"auto.assignment": "random"},
    {"metadata.refresh.interval.ms": 50},
    {"metadata.refresh.idle.interval.ms": 50},
    {"reservation.expiry.ms": 86400001},
    {"max.partitions": "100"},
    {"topic.rules": [{"match": "a", "replication.factor.mni": 2}]},
    {"topic.rules": [{"partitions.max": 2}]},
    {"topic.rules": [{"match": "a", "configs": {"compression.type": {"allowed": ["lz4"]}}}]},
    {"topic.rules": [{"match": "a", "configs": {"cleanup.policy": {"min": 1}}}]},
    {"topic.rules": [{"match": "a", "enforcement": "warn"}]},
    {"principals": {"cruise-control": {}}},
    {"principals": {"User:cc": {"exempt": ["everything"]}}},
    {"principals": {"User:cc": {"budget.partitions": 4}}},
    {"principal.unknown": "ANONYMOUS"},
    {"protected.topics": "keep"},
]


def kadmit_accepts(binary: str, doc) -> tuple[bool, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
        f.flush()
        p = subprocess.run([binary, "--check-policy", f.name], capture_output=True, text=True)
        return p.returncode == 0, p.stdout + p.stderr


def main() -> int:
    binary = sys.argv[1]
    schema = json.loads((ROOT / "docs" / "policy.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    examples = {str(p.relative_to(ROOT)): p.read_text()
                for p in sorted((ROOT / "docs" / "examples").glob("*.json"))}
    readme = (ROOT / "README.md").read_text()
    for i, block in enumerate(re.findall(r"```json\n(.*?)```", readme, re.S)):
        if '"max.broker.partitions"' in block:
            examples[f"README.md json block {i}"] = block
    assert len(examples) >= 3, examples
    failures = []
    for name, text in examples.items():
        errors = [e.message for e in validator.iter_errors(json.loads(text))]
        ok, out = kadmit_accepts(binary, text)
        if errors or not ok:
            failures.append(f"{name}: schema {errors or 'ok'}; kadmit: {out.strip()}")
        else:
            print(f"ok: {name}")
    for doc in BROKEN:
        schema_ok = validator.is_valid(doc)
        ok, out = kadmit_accepts(binary, doc)
        if schema_ok or ok:
            failures.append(f"{json.dumps(doc)}: schema accepts={schema_ok}, kadmit accepts={ok}")
        else:
            print(f"refused by both: {json.dumps(doc)}: {out.strip()}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
