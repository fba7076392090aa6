#!/usr/bin/env python3
"""What a proxy costs per MB/s of Kafka traffic: millicores per MB/s at a fixed offered rate, and
MB/s per core at saturation, for kadmit and HAProxy (TCP mode, one thread), next to direct, in one
run (`bench/run.sh --only load`; never run as a test).

The workload follows the one Kroxylicious publishes its sizing on: 10 topics (one partition each),
1 KiB records, a fixed total rate, one producer and one consumer per path. Both are
confluent-kafka (librdkafka) processes started by this script, so the load generator is the same
on every path:

  producer  acks=all, linger.ms=5; sends the fixed rate round-robin over the 10 topics (rate 0:
            as fast as it can). The first --warmup seconds are warmup (KIP-1052's idea): their
            records are sent but not counted; then the steady window of --steady seconds, whose
            records' publish latency (librdkafka's produce-to-acknowledgement time) is the
            latency reported.
  consumer  assigned to the 10 partitions from the start, reads everything the producer wrote and
            reports its progress every 0.5 s.

Over the steady window the proxy's CPU (utime+stime from /proc/<pid>/stat) and the bytes it
carried on its client side, both directions, are sampled: the kernel's bytes_sent+bytes_received
(`ss -ti`) of the proxy's sockets on its listening port, the same count for both proxies (kadmit's
kadmit_forwarded_bytes_total and HAProxy's frontend bin+bout are kept beside it as a check). Millicores per MB/s is
1000 x (proxy CPU seconds / window seconds) / (MB / window seconds). Any delivery error, consumer
error, a consumer that did not read every acknowledged record, or a proxy that died fails the run.

Every round runs the three paths, rotating which goes first; each run has its own 10 fresh topics.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent

PARAMS = {
    "BENCH_LOAD_ROUNDS": (3, 1, "load part: interleaved rounds (each runs all three paths)"),
    "BENCH_LOAD_RATE": ("50000", "5000", "load part: offered records/s in total over the 10 "
                        "topics, one fixed-rate set of runs per comma-separated rate"),
    "BENCH_LOAD_TOPICS": (10, 10, "load part: topics (one partition each)"),
    "BENCH_LOAD_WARMUP_S": (5, 2, "load part: warmup seconds per run (not counted)"),
    "BENCH_LOAD_STEADY_S": (15, 4, "load part: steady-window seconds per run"),
    "BENCH_LOAD_SATURATION": (1, 0, "load part: also run unthrottled (MB/s per core); 0 skips"),
}


# --- the load generator's two processes (this file, run with --worker) -------------------------

def worker_produce(a: dict) -> int:
    from confluent_kafka import Producer
    topics = a["topics"].split(",")
    p = Producer({"bootstrap.servers": a["bootstrap"], "acks": "all", "linger.ms": 5,
                  "batch.size": 65536, "queue.buffering.max.messages": 100000,
                  "queue.buffering.max.kbytes": 131072, "compression.type": "none",
                  "message.timeout.ms": 60000, "log_level": 3})
    value = os.urandom(a["size"])
    rate, warm, steady = a["rate"], a["warmup"], a["steady"]
    st = {"errors": 0, "first_error": None, "acked": 0, "lat": []}
    window = [0, 0]  # the steady window in epoch ms; records created inside it are measured

    def done(err, msg):
        if err is not None:
            st["errors"] += 1
            st["first_error"] = st["first_error"] or str(err)
            return
        st["acked"] += 1
        ts = msg.timestamp()[1]
        if window[0] and window[0] <= ts < (window[1] or 1 << 62):
            st["lat"].append(msg.latency())

    sent, steady_sent, n_topics = 0, 0, len(topics)
    t0 = time.monotonic()
    t_steady, t_end = t0 + warm, t0 + warm + steady
    in_steady = False
    while True:
        now = time.monotonic()
        if not in_steady and now >= t_steady:
            in_steady = True
            window[0] = int(time.time() * 1000)
            print(json.dumps({"event": "steady_start", "t": time.time()}), flush=True)
        if now >= t_end:
            window[1] = int(time.time() * 1000)
            print(json.dumps({"event": "steady_end", "t": time.time()}), flush=True)
            break
        want = int((now - t0) * rate) if rate > 0 else sent + 2000
        while sent < want:
            try:
                p.produce(topics[sent % n_topics], value, on_delivery=done)
            except BufferError:
                p.poll(0.001)
                continue
            sent += 1
            if in_steady:
                steady_sent += 1
            if sent % 1000 == 0:
                p.poll(0)
        p.poll(0)
        if rate > 0:
            time.sleep(0.002)
    left = p.flush(60)
    lat = sorted(st["lat"])

    def q(x: float) -> float:
        return 1000 * lat[min(len(lat) - 1, int(x * len(lat)))] if lat else float("nan")

    print(json.dumps({"event": "result", "sent": sent, "steady_sent": steady_sent,
                      "steady_s": (window[1] - window[0]) / 1000, "acked": st["acked"],
                      "unflushed": left, "errors": st["errors"], "first_error": st["first_error"],
                      "latency_n": len(lat), "p50_ms": q(0.5), "p99_ms": q(0.99),
                      "p999_ms": q(0.999),
                      "avg_ms": 1000 * sum(lat) / len(lat) if lat else float("nan")}), flush=True)
    return 0


def worker_consume(a: dict) -> int:
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING
    c = Consumer({"bootstrap.servers": a["bootstrap"], "group.id": f"load-{os.getpid()}",
                  "enable.auto.commit": False, "enable.partition.eof": False,
                  "fetch.max.bytes": 52428800, "fetch.wait.max.ms": 100, "log_level": 3})
    c.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in a["topics"].split(",")])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    count, nbytes, errors, first_error = 0, 0, 0, None
    last = 0.0
    while not stop:
        for m in c.consume(num_messages=2000, timeout=0.2):
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    errors += 1
                    first_error = first_error or str(m.error())
                continue
            count += 1
            nbytes += len(m.value())
        now = time.time()
        if now - last >= 0.5:
            last = now
            print(json.dumps({"event": "progress", "t": now, "count": count}), flush=True)
    c.close()
    print(json.dumps({"event": "result", "count": count, "bytes": nbytes, "errors": errors,
                      "first_error": first_error}), flush=True)
    return 0


# --- the orchestrator ---------------------------------------------------------------------------

def kadmit_bytes(admin_port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=5) as r:
        return int(sum(float(ln.split()[-1]) for ln in r.read().decode().splitlines()
                       if ln.startswith("kadmit_forwarded_bytes_total{")))


def socket_bytes(port: int) -> int:
    """Bytes sent plus received on every established TCP socket whose local port is port (the
    proxy's client-side sockets), from the kernel (ss -ti): the same count for either proxy."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    total = 0
    for word in out.split():
        if word.startswith(("bytes_sent:", "bytes_received:")):
            total += int(word.split(":", 1)[1])
    return total


def haproxy_bytes(sock_path: Path) -> int:
    """The FRONTEND rows' bin + bout: the bytes between the clients and HAProxy."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sock_path))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    lines = data.decode().splitlines()
    head = lines[0].lstrip("# ").split(",")
    ib, ob, sv = head.index("bin"), head.index("bout"), head.index("svname")
    return sum(int(f[ib]) + int(f[ob]) for f in (ln.split(",") for ln in lines[1:] if ln)
               if len(f) > ob and f[sv] == "FRONTEND")


def wait_leaders(k, topics: list[str], suite, timeout: float = 60) -> None:
    """Until the broker's Metadata gives every new partition a leader, so the producer's warmup
    is spent producing, not waiting for leaders."""
    deadline = time.monotonic() + timeout
    while True:
        md = suite.kafka_wire.metadata(suite.HOST, k.c.nodes[0].direct_port, topics=topics)
        led = [t for t in md["topics"] if t["error"] == 0
               and all(q["leader"] >= 0 for q in t["partitions"]) and t["partitions"]]
        if len(led) == len(topics):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"load: {len(led)} of {len(topics)} topics have a leader")
        time.sleep(0.2)


def one_run(k, p: dict, path: str, tag: str, rate: int, suite) -> dict:
    n = p["BENCH_LOAD_TOPICS"]
    topics = [f"load-{tag}-{path}-{i}" for i in range(n)]
    # one CreateTopics on the wire (the CLI costs a JVM start per call)
    made = suite.create_topics_raw(k.c.nodes[0].direct_port, topics, 1, k.rf)
    if any(code != 0 for _, code, _ in made):
        raise RuntimeError(f"load: creating the topics failed: {made}")
    wait_leaders(k, topics, suite)
    bs = k.bootstrap(path)
    common = ["--bootstrap", bs, "--topics", ",".join(topics)]
    cons = subprocess.Popen([sys.executable, __file__, "--worker", "consume", *common],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)  # the consumer's connections are up before the first record
    prod = subprocess.Popen([sys.executable, __file__, "--worker", "produce", *common,
                             "--rate", str(rate), "--size", str(p["BENCH_RECORD_SIZE"]),
                             "--warmup", str(p["BENCH_LOAD_WARMUP_S"]),
                             "--steady", str(p["BENCH_LOAD_STEADY_S"])],
                            stdout=subprocess.PIPE, text=True)
    # wire bytes: the kernel's count on the proxy's client-side sockets (the same for both
    # proxies); the proxy's own counter beside it as a check
    node = k.c.nodes[0]
    proxy_pid, counter, port = None, None, None
    if path == "kadmit":
        proxy_pid, port = k.sidecars[node.id].proc.pid(), node.sidecar_port
        counter = lambda: kadmit_bytes(node.admin_port)  # noqa: E731
    elif path == "haproxy":
        proxy_pid, port = k.hap.pid(), k.c.hap_front(node)
        counter = lambda: haproxy_bytes(k.hap_stats)  # noqa: E731
    samples, prod_lines = {}, []
    for line in prod.stdout:
        ev = json.loads(line)
        prod_lines.append(ev)
        if ev["event"] in ("steady_start", "steady_end"):
            samples[ev["event"]] = {"t": time.monotonic(),
                                    "cpu": suite.cpu_seconds(proxy_pid) if proxy_pid else 0.0,
                                    "bytes": socket_bytes(port) if port else 0,
                                    "counter": counter() if counter else 0,
                                    "load": suite.load_triplet()}
    prod.wait(120)
    pres = next((e for e in prod_lines if e["event"] == "result"), None)
    # the consumer reads until it has every acknowledged record (or 60 s more)
    deadline = time.monotonic() + 60
    cons_lines = []
    want = pres["acked"] if pres else 0
    for line in cons.stdout:
        ev = json.loads(line)
        cons_lines.append(ev)
        if ev["count"] >= want or time.monotonic() > deadline:
            break
    cons.send_signal(signal.SIGTERM)
    rest, _ = cons.communicate(timeout=60)
    cons_lines += [json.loads(x) for x in rest.splitlines() if x.strip()]
    cres = next((e for e in cons_lines if e["event"] == "result"), None)
    problems = []
    if prod.returncode != 0 or pres is None:
        problems.append(f"producer exit {prod.returncode}")
    if cres is None:
        problems.append("consumer gave no result")
    if pres and (pres["errors"] or pres["unflushed"]):
        problems.append(f"producer: {pres['errors']} delivery errors ({pres['first_error']}), "
                        f"{pres['unflushed']} unflushed")
    if cres and cres["errors"]:
        problems.append(f"consumer: {cres['errors']} errors ({cres['first_error']})")
    if pres and cres and cres["count"] != pres["acked"]:
        problems.append(f"consumer read {cres['count']} of {pres['acked']} acknowledged records")
    if proxy_pid and not os.path.exists(f"/proc/{proxy_pid}"):
        problems.append(f"{path} died")
    if pres and pres["steady_s"] < 0.5 * p["BENCH_LOAD_STEADY_S"]:
        problems.append(f"producer's steady window was {pres['steady_s']:.2f} s (starved)")
    if problems:
        raise RuntimeError(f"load {path} ({tag}): " + "; ".join(problems))
    s0, s1 = samples["steady_start"], samples["steady_end"]
    wall = s1["t"] - s0["t"]
    prog = [e for e in cons_lines if e["event"] == "progress"]

    def consumed_at(t_epoch: float) -> int:
        before = [e["count"] for e in prog if e["t"] <= t_epoch]
        return before[-1] if before else 0
    t_start = next(e["t"] for e in prod_lines if e["event"] == "steady_start")
    t_end = next(e["t"] for e in prod_lines if e["event"] == "steady_end")
    consumed = consumed_at(t_end) - consumed_at(t_start)
    size = p["BENCH_RECORD_SIZE"]
    res = {"path": path, "rate": rate, "window_s": wall,
           "produced_per_s": pres["steady_sent"] / pres["steady_s"],
           "consumed_per_s": consumed / (t_end - t_start),
           "payload_mb_per_s": (pres["steady_sent"] + consumed) * size / 1e6 / (t_end - t_start),
           "p50_ms": pres["p50_ms"], "p99_ms": pres["p99_ms"], "p999_ms": pres["p999_ms"],
           "avg_ms": pres["avg_ms"], "latency_n": pres["latency_n"],
           "load_start": s0["load"], "load_end": s1["load"]}
    # a fixed rate the path did not carry is not that rate's figure: said in the log and table
    res["sustained"] = rate == 0 or res["produced_per_s"] >= 0.97 * rate
    if proxy_pid:
        cores = (s1["cpu"] - s0["cpu"]) / wall
        mbps = (s1["bytes"] - s0["bytes"]) / 1e6 / wall
        res |= {"proxy_cores": cores, "wire_mb_per_s": mbps,
                "counter_mb_per_s": (s1["counter"] - s0["counter"]) / 1e6 / wall,
                "millicores_per_mb_s": 1000 * cores / mbps if mbps else float("nan"),
                "mb_s_per_core": mbps / cores if cores else float("nan")}
    return res


def run(k, p: dict, suite) -> dict:
    modes = [(f"fixed-{int(r)}", int(r)) for r in str(p["BENCH_LOAD_RATE"]).split(",") if r]
    if p["BENCH_LOAD_SATURATION"]:
        modes.append(("saturation", 0))
    out = {}
    for mode, rate in modes:
        runs = {x: [] for x in suite.PATHS}
        for r, order in suite.rotations(p["BENCH_LOAD_ROUNDS"]):
            for path in order:
                res = one_run(k, p, path, f"{mode[:3]}{rate}-{r}", rate, suite)
                runs[path].append(res)
                extra = (f", proxy {res['proxy_cores'] * 1000:.0f} millicores, wire "
                         f"{res['wire_mb_per_s']:.1f} MB/s (its counter "
                         f"{res['counter_mb_per_s']:.1f}) = {res['millicores_per_mb_s']:.1f} "
                         "millicores per MB/s" if "proxy_cores" in res else "")
                suite.log(f"load {mode} round {r + 1} {path}: produced "
                          f"{res['produced_per_s']:.0f}/s consumed {res['consumed_per_s']:.0f}/s, "
                          f"p50 {res['p50_ms']:.1f} p99 {res['p99_ms']:.1f} ms{extra}; load "
                          f"{res['load_end'][0]:.1f}"
                          + ("" if res["sustained"] else f" (rate {rate}/s NOT sustained)"))
        keys = ("produced_per_s", "consumed_per_s", "payload_mb_per_s", "p50_ms", "p99_ms",
                "p999_ms", "avg_ms")
        med = suite.summarize(runs, keys)
        for x in ("kadmit", "haproxy"):
            for key in ("proxy_cores", "wire_mb_per_s", "millicores_per_mb_s", "mb_s_per_core"):
                med[x][key] = suite.median([rr[key] for rr in runs[x]])
        out[mode] = {"rate": rate, "runs": runs, "median": med,
                     "not_sustained": sum(not rr["sustained"] for rs in runs.values()
                                          for rr in rs)}
    return out


def markdown(res: dict, p: dict) -> list[str]:
    L = ["## Cost per MB/s of Kafka traffic (10 topics, 1 KiB records)", "",
         f"{p['BENCH_LOAD_TOPICS']} topics of one partition, {p['BENCH_RECORD_SIZE']} B records, "
         "one confluent-kafka producer (acks=all, linger.ms=5) and one consumer per path; "
         f"{p['BENCH_LOAD_WARMUP_S']} s warmup not counted, then a {p['BENCH_LOAD_STEADY_S']} s "
         f"steady window; medians of {p['BENCH_LOAD_ROUNDS']} interleaved rounds. Wire MB/s: "
         "the proxy's client-side bytes, both directions; cores: its utime+stime over the window. "
         "Latency: librdkafka's produce-to-acknowledgement time of the steady window's records.",
         ""]
    for mode, m in res.items():
        md = m["median"]
        what = (f"fixed rate, {m['rate']} records/s offered" if m["rate"] else
                "saturation (unthrottled producer)")
        L += [f"### {what}", "",
              "| path | produced/s | consumed/s | payload MB/s | p50 ms | p99 ms | p99.9 ms | "
              "added p50 / p99 ms | proxy millicores | wire MB/s | millicores per MB/s | "
              "MB/s per core |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        d = md["direct"]
        for x in ("direct", "kadmit", "haproxy"):
            r = md[x]
            add = ("" if x == "direct" else
                   f"{r['p50_ms'] - d['p50_ms']:+.1f} / {r['p99_ms'] - d['p99_ms']:+.1f}")
            prox = ["", "", "", ""] if x == "direct" else [
                f"{r['proxy_cores'] * 1000:.0f}", f"{r['wire_mb_per_s']:.1f}",
                f"{r['millicores_per_mb_s']:.1f}", f"{r['mb_s_per_core']:.0f}"]
            L.append(f"| {x} | {r['produced_per_s']:.0f} | {r['consumed_per_s']:.0f} | "
                     f"{r['payload_mb_per_s']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                     f"{r['p999_ms']:.1f} | {add} | " + " | ".join(prox) + " |")
        loads = [rr["load_end"][0] for rs in m["runs"].values() for rr in rs]
        L += ["", f"Load average (1 min) at the end of the runs: {min(loads):.1f} to "
                  f"{max(loads):.1f}."
              + (f" {m['not_sustained']} run(s) produced under 97 % of the offered rate."
                 if m.get("not_sustained") else ""), ""]
    return L


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        kind = sys.argv[2]
        it = iter(sys.argv[3:])
        a = {k.lstrip("-"): v for k, v in zip(it, it)}
        for key in ("rate", "size", "warmup", "steady"):
            if key in a:
                a[key] = int(a[key])
        return worker_produce(a) if kind == "produce" else worker_consume(a)
    print("run through bench/run.sh --only load", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
