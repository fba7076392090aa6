"""The generator's pinned input: the kafka-clients jar named in specs.lock.

The JSON message specs are read straight from the jar's common/message/
folder; the error codes from its Errors class, disassembled by the JDK's
javap (loading the class would need its logging dependencies). Both are
checked against the sums in specs.lock, so the output depends on nothing
but the lock.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile

from ka_spec import strip_comments

HERE = os.path.dirname(os.path.abspath(__file__))
LOCK = os.path.join(HERE, "specs.lock")
SPEC_DIR = "common/message/"
ERRORS_CLASS = "org.apache.kafka.common.protocol.Errors"


def read_lock(path=LOCK):
    lock = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                lock[key.strip()] = value.strip()
    return lock


def cached_jar(lock):
    cache = os.environ.get("KADMIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "kadmit")
    return os.path.join(cache, lock["jar"])


def sha256_of(data):
    return hashlib.sha256(data).hexdigest()


class SpecJar:
    """The pinned jar, opened and verified."""

    def __init__(self, path, lock):
        if not os.path.isfile(path):
            raise SystemExit("generate.py: %s is missing; run protocol/gen/fetch-specs.sh to fetch "
                             "%s" % (path, lock["artifact"]))
        with open(path, "rb") as f:
            got = sha256_of(f.read())
        if got != lock["jar_sha256"]:
            raise SystemExit("generate.py: %s has sha256 %s, but specs.lock pins %s"
                             % (path, got, lock["jar_sha256"]))
        self.path = path
        self.lock = lock
        self.version = lock["kafka_version"]
        self.zip = zipfile.ZipFile(path)
        self.names = sorted(n[len(SPEC_DIR):] for n in self.zip.namelist()
                            if n.startswith(SPEC_DIR) and n.endswith(".json"))

    def spec_names(self):
        return self.names

    def load(self, name):
        return json.loads(strip_comments(self.zip.read(SPEC_DIR + name).decode("utf-8")))

    def error_codes(self):
        """[(code, NAME)] in declaration order, checked against errors_sha256."""
        javap = shutil.which("javap")
        if javap is None and os.environ.get("JAVA_HOME"):
            javap = os.path.join(os.environ["JAVA_HOME"], "bin", "javap")
        if javap is None or not os.path.exists(javap):
            raise SystemExit("generate.py: javap (from a JDK, 11 or newer) is needed to read the "
                             "error codes from %s" % self.path)
        out = subprocess.run([javap, "-c", "-constants", "-cp", self.path, ERRORS_CLASS],
                             stdout=subprocess.PIPE, check=True).stdout.decode()
        codes = parse_errors_clinit(out)
        text = "".join("%d %s\n" % c for c in codes)
        got = sha256_of(text.encode())
        if got != self.lock["errors_sha256"]:
            raise SystemExit("generate.py: the error codes read from %s have sha256 %s, but "
                             "specs.lock pins %s" % (self.path, got, self.lock["errors_sha256"]))
        return codes


PUSH = re.compile(r"^\s*\d+: (iconst_m1|iconst_(\d)|bipush\s+(-?\d+)|sipush\s+(-?\d+))\s*$")
NAME = re.compile(r"^\s*\d+: ldc(?:_w)?\s+#\d+\s+// String ([A-Z0-9_]+)\s*$")


def push_value(m):
    if m.group(1) == "iconst_m1":
        return -1
    for g in (2, 3, 4):
        if m.group(g) is not None:
            return int(m.group(g))
    raise ValueError(m.group(0))


def parse_errors_clinit(javap_text):
    """Each constant is built as new Errors(NAME, ordinal, code, message, builder):
    a String constant, then two int pushes, the ordinal and the code."""
    lines = javap_text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == "static {};")
    codes, i = [], start
    while i + 2 < len(lines):
        m = NAME.match(lines[i])
        p1, p2 = PUSH.match(lines[i + 1]), PUSH.match(lines[i + 2])
        if m and p1 and p2 and push_value(p1) == len(codes):
            codes.append((push_value(p2), m.group(1)))
            i += 3
            continue
        if lines[i].strip().startswith("putstatic") and "$VALUES" in lines[i]:
            break
        i += 1
    names = [n for _, n in codes]
    if len(codes) < 100 or len(set(names)) != len(names) or \
            len(set(c for c, _ in codes)) != len(codes):
        raise SystemExit("generate.py: could not read the error codes from %s" % ERRORS_CLASS)
    return codes
