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
