"""Real Kafka clients for the integration tests: kcat (librdkafka) and Kafka's own CLI tools."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import time
from pathlib import Path

from kafka_cluster import tool

KCAT = shutil.which("kcat") or "kcat"


class CommandFailed(AssertionError):
    pass


def run(argv: list[str], timeout: float = 120.0, input_: bytes | None = None,
        check: bool = True, stdout_file: Path | None = None) -> subprocess.CompletedProcess:
    """Run a command; on failure raise with its output (tail) in the message."""
    t0 = time.monotonic()
    out_f = open(stdout_file, "wb") if stdout_file else None
    try:
        p = subprocess.run(argv, input=input_, stdout=out_f or subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout,
                           stdin=None if input_ is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise CommandFailed(f"timed out after {timeout}s: {' '.join(argv)}\n"
                            f"stderr: {(e.stderr or b'')[-3000:].decode(errors='replace')}")
    finally:
        if out_f:
            out_f.close()
    p.elapsed = time.monotonic() - t0  # type: ignore[attr-defined]
    if check and p.returncode != 0:
        out = (p.stdout or b"")[-3000:].decode(errors="replace")
        err = (p.stderr or b"")[-3000:].decode(errors="replace")
        raise CommandFailed(f"exit {p.returncode}: {' '.join(argv)}\nstdout: {out}\nstderr: {err}")
    return p


def text(p: subprocess.CompletedProcess) -> str:
    return (p.stdout or b"").decode(errors="replace")


# --- kcat ----------------------------------------------------------------------

def kcat_produce_file(bootstrap: str, topic: str, path: Path, *props: str,
                      timeout: float = 300.0) -> subprocess.CompletedProcess:
    argv = [KCAT, "-P", "-b", bootstrap, "-t", topic, "-l", str(path)]
    for p in props:
        argv += ["-X", p]
    p = run(argv, timeout=timeout)
    err = (p.stderr or b"").decode(errors="replace")
    if "Delivery failed" in err or "ERROR" in err:
        raise CommandFailed(f"kcat reported delivery errors:\n{err[-3000:]}")
    return p


def kcat_consume_to_file(bootstrap: str, topic: str, out: Path, *props: str,
                         timeout: float = 300.0) -> None:
    """Consume the whole topic (every partition, from the beginning to the end) into out."""
    argv = [KCAT, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
            "-f", "%s\\n"]
    for p in props:
        argv += ["-X", p]
    run(argv, timeout=timeout, stdout_file=out)


def kcat_metadata(bootstrap: str) -> str:
    return text(run([KCAT, "-L", "-b", bootstrap], timeout=30))


def sorted_sha256(path: Path) -> tuple[int, str]:
    """(line count, sha256 of the sorted lines): equal for the same multiset of records."""
    lines = path.read_bytes().splitlines()
    lines.sort()
    h = hashlib.sha256()
    for line in lines:
        h.update(line)
        h.update(b"\n")
    return len(lines), h.hexdigest()


def write_records(path: Path, count: int, prefix: str, width: int = 60) -> None:
    """count distinct newline-separated records of about width bytes."""
    pad = "x" * max(0, width - len(prefix) - 12)
    with open(path, "w") as f:
        for start in range(0, count, 100_000):
            f.write("".join(f"{prefix}-{i:09d}-{pad}\n"
                            for i in range(start, min(count, start + 100_000))))


# --- Kafka CLI tools ---------------------------------------------------------------

def topics(bootstrap: str, *args: str, timeout: float = 90.0, check: bool = True):
    return run([tool("kafka-topics"), "--bootstrap-server", bootstrap, *args],
               timeout=timeout, check=check)


def configs(bootstrap: str, *args: str, timeout: float = 90.0):
    return run([tool("kafka-configs"), "--bootstrap-server", bootstrap, *args], timeout=timeout)


def create_topic(bootstrap: str, name: str, partitions: int = 3, rf: int = 3, *extra: str):
    topics(bootstrap, "--create", "--topic", name, "--partitions", str(partitions),
           "--replication-factor", str(rf), *extra)


def end_offsets_total(bootstrap: str, topic: str) -> int:
    """Sum of the high watermarks of every partition (kcat -Q is per partition; use -L + -o)."""
    md = text(run([KCAT, "-L", "-b", bootstrap, "-t", topic, "-J"], timeout=30))
    import json
    parts = [p["partition"] for p in json.loads(md)["topics"][0]["partitions"]]
    total = 0
    for part in parts:
        out = text(run([KCAT, "-Q", "-b", bootstrap, "-t", f"{topic}:{part}:-1", "-J"],
                       timeout=30))
        total += int(json.loads(out)[topic][str(part)]["offset"])
    return total


def topic_shows_up(exists, topic: str, timeout: float = 30.0, interval: float = 0.2) -> bool:
    """Whether an admitted topic shows up within timeout, asked through exists(topic): the
    controller answers CreateTopics once its records are committed, and a broker lists the topic
    only after applying them."""
    deadline = time.monotonic() + timeout
    while not exists(topic):
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def wait_end_offsets_total(bootstrap: str, topic: str, expected: int, timeout: float = 60.0) -> int:
    """end_offsets_total once it reaches `expected`, or its last value after `timeout`.

    High watermarks trail the records a leader acknowledged with acks=0 or acks=1 until the
    followers have replicated them, so a count taken right after such a producer exits can be
    short without anything being lost."""
    deadline = time.monotonic() + timeout
    while True:
        got = end_offsets_total(bootstrap, topic)
        if got >= expected or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def producer_perf(bootstrap: str, topic: str, records: int, record_size: int = 100,
                  throughput: int = -1, props: dict | None = None, timeout: float = 300.0) -> dict:
    """Run kafka-producer-perf-test; return the parsed final summary. Fails on send errors."""
    pp = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": "true"}
    pp.update(props or {})
    argv = [tool("kafka-producer-perf-test"), "--topic", topic, "--num-records", str(records),
            "--record-size", str(record_size), "--throughput", str(throughput),
            "--producer-props", *[f"{k}={v}" for k, v in pp.items()]]
    p = run(argv, timeout=timeout)
    return parse_perf(text(p), (p.stderr or b"").decode(errors="replace"), records)


_SUMMARY = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)")


def _failures(stream: str) -> list[str]:
    """Stack traces of failed sends (the perf test prints them); client log lines (retries,
    disconnects, which are expected across restarts) start with a timestamp and are ignored."""
    return [line for line in stream.splitlines()
            if not line.startswith("[") and ("Exception" in line or line.startswith("\tat "))]


def parse_perf(out: str, err: str, expected: int) -> dict:
    failures = _failures(out) + _failures(err)
    if failures:
        raise CommandFailed("producer perf test reported failed sends:\n"
                            + "\n".join(failures[:30]))
    summaries = [m for m in (_SUMMARY.match(line) for line in out.splitlines()) if m]
    if not summaries:
        raise CommandFailed(f"no summary in producer perf output:\n{out[-2000:]}")
    # 5-second window lines, then the total line (sent == expected).
    finals = [m for m in summaries if int(m.group(1)) == expected]
    total = finals[0] if finals else summaries[-1]
    last = summaries[-1]
    return {"sent": int(total.group(1)), "records_per_sec": float(last.group(2)),
            "mb_per_sec": float(last.group(3)), "output": out}


class Background:
    """A client running in the background; finish() waits and returns (rc, stdout, stderr)."""

    def __init__(self, argv: list[str], workdir: Path, name: str):
        self.argv = argv
        self.out = workdir / f"{name}.out"
        self.err = workdir / f"{name}.err"
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(self.out, "wb"),
                                  stderr=open(self.err, "wb"))

    def finish(self, timeout: float) -> tuple[int, str, str]:
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = -9
        return (rc, self.out.read_text(errors="replace"), self.err.read_text(errors="replace"))

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def background_producer_perf(bootstrap: str, topic: str, records: int, throughput: int,
                             workdir: Path, record_size: int = 100,
                             props: dict | None = None) -> Background:
    pp = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": "true",
          "delivery.timeout.ms": 120000, "request.timeout.ms": 15000}
    pp.update(props or {})
    return Background([tool("kafka-producer-perf-test"), "--topic", topic,
                       "--num-records", str(records), "--record-size", str(record_size),
                       "--throughput", str(throughput),
                       "--producer-props", *[f"{k}={v}" for k, v in pp.items()]],
                      workdir, "producer")


def background_group_consumer(bootstrap: str, topic: str, records: int, workdir: Path,
                              timeout_ms: int = 60000) -> Background:
    return Background([tool("kafka-console-consumer"), "--bootstrap-server", bootstrap,
                       "--topic", topic, "--group", f"g-{topic}", "--from-beginning",
                       "--max-messages", str(records), "--timeout-ms", str(timeout_ms)],
                      workdir, "consumer")


def finish_producer(bg: Background, records: int, timeout: float) -> dict:
    rc, out, err = bg.finish(timeout)
    if rc != 0:
        raise CommandFailed(f"producer exit {rc}\n{out[-2000:]}\n{err[-3000:]}")
    return parse_perf(out, err, records)


def finish_consumer(bg: Background, records: int, timeout: float) -> int:
    rc, out, err = bg.finish(timeout)
    got = len(out.splitlines())
    if rc != 0 or got != records:
        raise CommandFailed(f"consumer exit {rc}, {got}/{records} records\n{err[-3000:]}")
    return got


# --- raw admission requests (flexible versions), one sidecar at a time ----------------------
#
# A real client sends its admin requests to whichever broker its Metadata named, so only a raw
# connection can say which sidecar judges a request. These speak the flexible versions (request
# header v2, response header v1): CreateTopics v5, CreatePartitions v2 and
# AlterPartitionReassignments v0. Each result is (name, error_code, error_message).

import struct as _struct  # noqa: E402

import kafka_wire as _kw  # noqa: E402


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _carr(items: list[bytes] | None) -> bytes:
    return b"\x00" if items is None else _uvarint(len(items) + 1) + b"".join(items)


def _int32s(xs: list[int]) -> bytes:
    return _carr([_struct.pack(">i", x) for x in xs])


NO_TAGS = b"\x00"


def _flex_request(api_key: int, version: int, cid: int, body: bytes) -> bytes:
    # request header v2 = header v1 + its (empty) tagged fields
    return _kw.request(api_key, version, cid, NO_TAGS + body, client_id="kadmit-it-raw")


class FlexReader(_kw.Reader):
    def uvarint(self) -> int:
        value, shift, more = 0, 0, True
        while more:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            shift, more = shift + 7, byte >= 0x80
        return value

    def cstring(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def carray(self, item) -> list:
        n = self.uvarint() - 1
        return [] if n < 0 else [item() for _ in range(n)]

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


def create_topics_v5(cid: int, topics: list[tuple], timeout_ms: int = 30000,
                     validate_only: bool = False) -> bytes:
    """topics: (name, partitions, rf) or (name, assignment) with assignment a list of replica
    lists (partition i gets assignment[i])."""
    items = []
    for t in topics:
        if len(t) == 2:
            name, assignment = t
            parts, rf = -1, -1
            assign = [_struct.pack(">i", i) + _int32s(r) + NO_TAGS
                      for i, r in enumerate(assignment)]
        else:
            name, parts, rf = t
            assign = []
        items.append(_cstr(name) + _struct.pack(">ih", parts, rf) + _carr(assign) + _carr([])
                     + NO_TAGS)
    body = _carr(items) + _struct.pack(">i?", timeout_ms, validate_only) + NO_TAGS
    return _flex_request(19, 5, cid, body)


def parse_create_topics_v5(body: bytes) -> list[tuple[str, int, str | None]]:
    r = FlexReader(body)
    r.skip_tags()  # response header v1
    r.take(">i")  # throttle

    def config():
        r.cstring(), r.cstring(), r.take(">?bb")
        r.skip_tags()

    def topic():
        name, code, msg = r.cstring(), r.take(">h"), r.cstring()
        r.take(">ih")  # partitions, replication factor
        r.carray(config)
        r.skip_tags()
        return name, code, msg

    return r.carray(topic)


def create_partitions_v2(cid: int, totals: dict[str, int], timeout_ms: int = 30000) -> bytes:
    """Grows each topic to its total partition count (the broker or kadmit places them)."""
    items = [_cstr(name) + _struct.pack(">i", n) + b"\x00" + NO_TAGS for name, n in totals.items()]
    return _flex_request(37, 2, cid, _carr(items) + _struct.pack(">i?", timeout_ms, False)
                         + NO_TAGS)


def parse_create_partitions_v2(body: bytes) -> list[tuple[str, int, str | None]]:
    r = FlexReader(body)
    r.skip_tags()
    r.take(">i")

    def result():
        out = (r.cstring(), r.take(">h"), r.cstring())
        r.skip_tags()
        return out

    return r.carray(result)


def alter_reassignments_v0(cid: int, moves: dict[tuple[str, int], list[int]],
                           timeout_ms: int = 30000) -> bytes:
    """moves: (topic, partition) -> the partition's new replica list."""
    by_topic: dict[str, list[bytes]] = {}
    for (topic, part), replicas in moves.items():
        by_topic.setdefault(topic, []).append(_struct.pack(">i", part) + _int32s(replicas)
                                              + NO_TAGS)
    items = [_cstr(t) + _carr(ps) + NO_TAGS for t, ps in by_topic.items()]
    return _flex_request(45, 0, cid, _struct.pack(">i", timeout_ms) + _carr(items) + NO_TAGS)


def parse_alter_reassignments_v0(body: bytes) -> tuple[int, list[tuple[str, int, str | None]]]:
    """(top-level error code, [("topic:partition", error_code, error_message)])."""
    r = FlexReader(body)
    r.skip_tags()
    r.take(">i")
    top = r.take(">h")
    r.cstring()
    out = []

    def partition(topic):
        idx, code, msg = r.take(">i"), r.take(">h"), r.cstring()
        r.skip_tags()
        out.append((f"{topic}:{idx}", code, msg))

    def topic():
        name = r.cstring()
        r.carray(lambda: partition(name))
        r.skip_tags()

    r.carray(topic)
    return top, out


def delete_topics_v4(cid: int, names: list[str], timeout_ms: int = 30000) -> bytes:
    return _flex_request(20, 4, cid, _carr([_cstr(n) for n in names])
                         + _struct.pack(">i", timeout_ms) + NO_TAGS)


def parse_delete_topics_v4(body: bytes) -> list[tuple[str, int]]:
    r = FlexReader(body)
    r.skip_tags()
    r.take(">i")

    def result():
        out = (r.cstring(), r.take(">h"))
        r.skip_tags()
        return out

    return r.carray(result)


def raw_pipeline(port: int, frames: list[bytes], timeout: float = 60.0) -> list[bytes]:
    """Every frame sent at once on one connection, then their responses in order."""
    with _kw.Connection("127.0.0.1", port, timeout=timeout) as c:
        for f in frames:
            c.send(f)
        return [c.recv()[1] for _ in frames]


def raw_call(port: int, frame: bytes, timeout: float = 60.0) -> bytes:
    """One request on a fresh connection to 127.0.0.1:port; the response body (header
    included after the correlation id)."""
    with _kw.Connection("127.0.0.1", port, timeout=timeout) as c:
        _, body = c.call(frame)
        return body


def produce_acks1(port: int, topic: str, partition: int, values: list[bytes]) -> tuple[int, int]:
    """Produce v3 with acks=1 through port: (error_code, base_offset)."""
    body = raw_call(port, _kw.produce_request(1, topic, partition, values, acks=1))
    r = _kw.Reader(body)
    r.take(">i")  # topics
    r.string()
    r.take(">i")  # partitions
    _, code, base, _ = r.take(">ihqq")
    return code, base


def fetch_records(port: int, topic: str, partition: int, offset: int = 0) -> tuple[int, bytes]:
    """Fetch v4 through port: (error_code, the partition's record bytes)."""
    body = raw_call(port, _kw.fetch_v4(1, topic, partition, offset))
    r = _kw.Reader(body)
    r.take(">i")  # throttle
    r.take(">i")  # responses
    r.string()
    r.take(">i")  # partitions
    _, code, _, _ = r.take(">ihqq")
    r.array(lambda: r.take(">qq"))  # aborted transactions
    n = r.take(">i")
    return code, body[r.pos:r.pos + max(n, 0)]


# --- confluent-kafka (librdkafka's admin API) -------------------------------------------------

def rdk_results(futures: dict, timeout: float = 90.0) -> dict[str, tuple[int, str | None]]:
    """{name: (error code, message)} of an AdminClient call's futures (0 when it succeeded)."""
    from confluent_kafka import KafkaException
    out = {}
    for name, f in futures.items():
        try:
            f.result(timeout)
            out[name] = (0, None)
        except KafkaException as e:
            err = e.args[0]
            out[name] = (err.code(), err.str())
    return out


def rdk_create_topics(bootstrap: str, specs: list[tuple[str, int, int]],
                      timeout: float = 90.0) -> dict[str, tuple[int, str | None]]:
    """Creates (name, partitions, rf) topics in one CreateTopics request with confluent-kafka."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(n, p, r) for n, p, r in specs],
                             operation_timeout=30, request_timeout=60)
    return rdk_results(fs, timeout)


def rdk_create_partitions(bootstrap: str, totals: dict[str, int],
                          timeout: float = 90.0) -> dict[str, tuple[int, str | None]]:
    from confluent_kafka.admin import AdminClient, NewPartitions
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_partitions([NewPartitions(t, n) for t, n in totals.items()],
                                 operation_timeout=30, request_timeout=60)
    return rdk_results(fs, timeout)


# --- the Java AdminClient (tests/integration/java/AdmissionClient.java) ---------------------------

def java_build_admission_client(kafka_home_: Path, classes: Path) -> Path:
    classes.mkdir(parents=True, exist_ok=True)
    source = Path(__file__).resolve().parent / "java" / "AdmissionClient.java"
    run(["javac", "-nowarn", "-cp", f"{kafka_home_}/libs/*", "-d", str(classes), str(source)],
        timeout=180)
    return classes


def java_create_topics(kafka_home_: Path, classes: Path, bootstrap: str,
                       specs: list[tuple[str, int, int]]) -> dict[str, str]:
    """One createTopics call from the Java AdminClient: {name: "OK" | "ERROR Class: message"}."""
    argv = ["java", "-cp", f"{classes}:{kafka_home_}/libs/*", "-Dlog4j2.level=off",
            "AdmissionClient", "create", bootstrap, "false", *[f"{n}:{p}:{r}" for n, p, r in specs]]
    results = {}
    for line in text(run(argv, timeout=120)).splitlines():
        if line.startswith("RESULT "):
            name, verdict = line[len("RESULT "):].split(" ", 1)
            results[name] = verdict
    return results
