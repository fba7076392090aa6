"""The faults. Each is a function (suite, rng, hold) that injects its fault, keeps it for about
`hold` seconds while the workload goes on, and undoes it; it returns what it did, for the
report. They run in the suite's main thread while the workload's threads keep sending requests.

- broker_kill: SIGKILL one broker, restart it after `hold`, wait until it serves again.
- rolling_restart: each broker in turn stopped (SIGTERM, controlled shutdown) and started again.
- sidecar_kill: SIGKILL one sidecar, start it again (it rebuilds its state from the ledger).
- sidecar_pause: SIGSTOP one sidecar for longer than the intent TTL, then SIGCONT.
- network: Toxiproxy toxics on the path between sidecar 3 and its broker: latency, reset_peer
  (every connection cut with a TCP RST), then a blackhole (the timeout toxic with timeout 0:
  nothing passes until it is removed).
- clock: one sidecar restarted under faketime with its clock 90 s ahead, kept
  so for `hold`, then restarted with the right clock.
- forged_limits: a copy of a real `__kadmit_limits` record with every broker's limit raised,
  written straight to the brokers (as any client of the brokers could); undone through the API.
- forged_ledger: copies of real ledger intents with negative deltas, and an outcome
  "released" for every real intent written during the hold, at once (while it is live),
  straight to the brokers.
"""

from __future__ import annotations

import json
import signal
import time

import clients
from suite import INTENT_TTL_MS, LEDGER, LIMITS_TOPIC, TOXI_SIDECAR, Suite, log


def broker_kill(s: Suite, rng, hold: float) -> dict:
    b = rng.choice([1, 2, 3])
    log(f"fault: SIGKILL broker {b}")
    s.c.kill_node(b)
    time.sleep(hold)
    t0 = time.monotonic()
    starts = s.start_broker(b)
    return {"broker": b, "down_s": round(hold + time.monotonic() - t0, 1), "starts": starts}


def rolling_restart(s: Suite, rng, hold: float) -> dict:
    took = {}
    for b in (1, 2, 3):
        log(f"fault: rolling restart, broker {b}")
        t0 = time.monotonic()
        s.c.stop_node(b, timeout=30)
        s.start_broker(b)
        took[b] = round(time.monotonic() - t0, 1)
        time.sleep(min(hold, 3))
    return {"restart_s": took}


def sidecar_kill(s: Suite, rng, hold: float) -> dict:
    i = rng.choice([1, 2, 3])
    log(f"fault: SIGKILL sidecar {i}")
    s.expected_down.add(i)
    s.sc[i].proc.kill()
    time.sleep(min(hold, 3))
    s.spawn(i, ready=False)
    ready = s.wait_admission(i, 60)
    s.expected_down.discard(i)
    return {"sidecar": i, "ready_again": ready}


def sidecar_pause(s: Suite, rng, hold: float) -> dict:
    i = rng.choice([1, 2, 3])
    paused = max(hold, INTENT_TTL_MS / 1000 + 3)
    log(f"fault: SIGSTOP sidecar {i} for {paused:.0f}s")
    s.sc[i].proc.signal(signal.SIGSTOP)
    time.sleep(paused)
    s.sc[i].proc.signal(signal.SIGCONT)
    return {"sidecar": i, "paused_s": paused}


def _toxic(s: Suite, body: dict, hold: float) -> None:
    st, txt = s.toxi("POST", "/proxies/sidecar3/toxics", body)
    assert st in (200, 201), (st, txt)
    time.sleep(hold)
    st, txt = s.toxi("DELETE", f"/proxies/sidecar3/toxics/{body['name']}")
    assert st in (200, 204), (st, txt)


def network(s: Suite, rng, hold: float) -> dict:
    if s.toxiproxy is None:
        return {"skipped": "no toxiproxy"}
    part = max(3.0, hold / 3)
    log(f"fault: network, sidecar {TOXI_SIDECAR}: latency {part:.0f}s")
    _toxic(s, {"name": "lat", "type": "latency", "stream": "downstream",
               "attributes": {"latency": 700, "jitter": 500}}, part)
    _toxic(s, {"name": "latup", "type": "latency", "stream": "upstream",
               "attributes": {"latency": 300, "jitter": 300}}, part / 2)
    log(f"fault: network, sidecar {TOXI_SIDECAR}: reset_peer {part:.0f}s")
    _toxic(s, {"name": "rst", "type": "reset_peer", "stream": "downstream",
               "attributes": {"timeout": 0}}, part)
    black = max(part, INTENT_TTL_MS / 1000 + 3)
    log(f"fault: network, sidecar {TOXI_SIDECAR}: blackhole {black:.0f}s")
    _toxic(s, {"name": "hole", "type": "timeout", "stream": "upstream",
               "attributes": {"timeout": 0}}, black)
    return {"sidecar": TOXI_SIDECAR, "latency_s": part * 1.5, "reset_peer_s": part,
            "blackhole_s": black}


def clock(s: Suite, rng, hold: float) -> dict:
    i = rng.choice([1, 2, 3])
    # Ahead only: a clock behind by 90 s does not start under faketime here, because
    # librdkafka's absolute-time condition waits are computed on the faked clock but timed by
    # the kernel's real one (deadline already past: "Timed out waiting for background thread").
    # A machine whose clock is really behind has no such split, so that would be a harness
    # artefact, not a finding.
    off = "+90s"
    log(f"fault: sidecar {i} restarted under faketime {off}")
    s.expected_down.add(i)
    s.sc[i].stop()
    s.faketime[i] = off
    try:
        s.spawn(i, ready=False)
        ready = s.wait_admission(i, 30)
        s.expected_down.discard(i)
        time.sleep(hold)
        alive = s.sc[i].proc.alive()
    finally:
        s.expected_down.add(i)
        s.sc[i].stop()
        s.faketime.pop(i, None)
        s.spawn(i, ready=False)
        s.wait_admission(i, 60)
        s.expected_down.discard(i)
    return {"sidecar": i, "offset": off, "ready_under_faketime": ready,
            "alive_after_hold": alive}


# --- forged records ------------------------------------------------------------------------------

def _kcat_tail(s: Suite, topic: str, n: int) -> list[tuple[str, str]]:
    p = clients.run([clients.KCAT, "-C", "-b", s.c.direct_bootstrap, "-t", topic, "-o", f"-{n}",
                     "-e", "-q", "-f", "%k\t%s\n"], timeout=60, check=False)
    out = []
    for line in clients.text(p).splitlines():
        k, _, v = line.partition("\t")
        if v:
            out.append((k, v))
    return out


def _kcat_put(s: Suite, topic: str, records: list[tuple[str, str]]) -> None:
    data = "".join(f"{k}\t{v}\n" for k, v in records).encode()
    clients.run([clients.KCAT, "-P", "-b", s.c.direct_bootstrap, "-t", topic, "-p", "0",
                 "-K", "\t", "-X", "acks=all"], input_=data, timeout=60)


def forged_limits(s: Suite, rng, hold: float) -> dict:
    """A real limits record (an API call that changes nothing), then a copy of it with every
    broker's limit raised by 500, written straight to the brokers."""
    limits = s.limits.current()
    done: dict = {}
    st, _ = s.admin(1, "PUT", "/v1/limits/brokers/1", {"max.broker.partitions": limits[1]})
    done["real_limits_put"] = st
    real = [(k, v) for k, v in _kcat_tail(s, LIMITS_TOPIC, 5) if k == "overrides"]
    if not real:
        raise RuntimeError("no real limits record to copy")
    doc = json.loads(real[-1][1])
    doc["overrides"] = {"brokers": {str(b): {"max.broker.partitions": n + 500}
                                    for b, n in limits.items()}}
    doc["written_at_ms"] = int(time.time() * 1000)
    _kcat_put(s, LIMITS_TOPIC, [("overrides", json.dumps(doc))])
    done["forged"] = {"written_by": doc.get("written_by"), "overrides": doc["overrides"]}
    log(f"fault: forged limits record written: {done}")
    time.sleep(hold)
    # the legitimate way back: an empty cluster layer through the API
    st, _ = s.admin(1, "DELETE", "/v1/policy/overrides")
    done["overrides_cleared"] = st
    return done


def forged_ledger(s: Suite, rng, hold: float) -> dict:
    """Forged ledger records, straight to the brokers: copies of the last real intents with
    deltas of -200 per broker (new seq, ts now); then, for `hold` seconds, every real intent
    that appears is answered at once by a forged outcome "released" under its own sidecar's
    name, while the intent is still live (a release honoured there would let the other
    sidecars admit past the limit before the view shows the topic)."""
    limits = s.limits.current()
    recs = []
    for k, v in _kcat_tail(s, LEDGER, 300):
        try:
            recs.append((k, json.loads(v)))
        except ValueError:
            continue
    intents = [(k, r) for k, r in recs if r.get("type") == "intent"][-3:]
    if not intents:
        raise RuntimeError("no real ledger intent to copy")
    neg_recs = []
    for n, (k, r) in enumerate(intents):
        neg = dict(r, seq=int(r.get("seq", 0)) + 1000000 + n, ts=int(time.time() * 1000))
        neg["items"] = [dict(it, deltas=[[b, -200] for b in limits]) for it in r.get("items", [])]
        neg_recs.append((k, json.dumps(neg)))
    _kcat_put(s, LEDGER, neg_recs)
    log(f"fault: forged ledger: {len(neg_recs)} intents with negative deltas written; "
        f"releasing every new intent for {hold:.0f}s")
    released = _release_live_intents(s, hold, {json.loads(v)["seq"] for _, v in neg_recs})
    done = {"negative_intents": len(neg_recs), "live_intents_released": released}
    time.sleep(INTENT_TTL_MS / 1000 + 1)  # past the TTL of anything forged
    return done


def _release_live_intents(s: Suite, hold: float, own: set) -> int:
    """Follows the ledger from its end and answers each new intent with a forged "released"
    outcome, as fast as a kcat pipe allows; returns how many."""
    import subprocess
    import threading
    cons = subprocess.Popen([clients.KCAT, "-C", "-b", s.c.direct_bootstrap, "-t", LEDGER, "-o",
                             "end", "-u", "-q", "-f", "%k\t%s\n"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    prod = subprocess.Popen([clients.KCAT, "-P", "-b", s.c.direct_bootstrap, "-t", LEDGER, "-p",
                             "0", "-K", "\t", "-X", "acks=1", "-X", "linger.ms=0"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)
    count = [0]

    def pump() -> None:
        for line in cons.stdout:
            k, _, v = line.rstrip("\n").partition("\t")
            try:
                r = json.loads(v)
            except ValueError:
                continue
            if r.get("type") != "intent" or r.get("seq") in own:  # not the forged ones
                continue
            out = {"type": "outcome", "sidecar": r.get("sidecar"), "seq": r.get("seq"),
                   "items": ["released"] * len(r.get("items", []))}
            try:
                prod.stdin.write(f"{k}\t{json.dumps(out)}\n")
                prod.stdin.flush()
                count[0] += 1
            except (BrokenPipeError, ValueError):
                return

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    time.sleep(hold)
    cons.terminate()
    t.join(5)
    try:
        prod.stdin.close()
    except BrokenPipeError:
        pass
    prod.wait(15)
    cons.wait(5)
    return count[0]


ALL = {"broker_kill": broker_kill, "rolling_restart": rolling_restart,
       "sidecar_kill": sidecar_kill, "sidecar_pause": sidecar_pause, "network": network,
       "clock": clock, "forged_limits": forged_limits, "forged_ledger": forged_ledger}
