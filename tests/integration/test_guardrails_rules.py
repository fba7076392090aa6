"""Guardrails beyond partition counts (issue #19): topic rules, a name pattern and tenant budgets,
judged by three sidecars in front of a real 3-broker KRaft cluster, each with the same policy
file (the issue's example policy plus two rules) and `--ledger on`.

Real clients make every request: kafka-topics, the Java AdminClient, confluent-kafka, and raw
CreateTopics frames where a test must choose the sidecar. Each rule is broken once and met once;
every refusal is POLICY_VIOLATION (44) with a message that says what to change. The budget of 20
partitions of team-a's topics is used up through two sidecars, the one past it refused by the
sidecar that did not admit the others; an audit-mode rule admits what it flags and counts it.

The brokers' defaults are num.partitions 1 and default.replication.factor 3, so a create with -1
counts is judged at those. Its own cluster on ports $KADMIT_TEST_PORT_BASE + 700.
"""

from __future__ import annotations

import re
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
import kafka_wire  # noqa: E402
from admin_client import http, wait_ready  # noqa: E402
from kafka_cluster import (KafkaCluster, Sidecars, kadmit_bin, own_cluster,  # noqa: E402
                           port_base, port_open)
from test_cluster_wide import CW  # noqa: E402  (its helpers, not its tests or fixtures)

OFFSET = 700
POLICY_VIOLATION = 44
BUDGET = 20
TEAM_A = r"team-a\..*"
RULES = {
    "topic.name.pattern": "^[a-z0-9][a-z0-9._-]*$",
    "protected.topics": [r"keep\..*"],
    "topic.rules": [
        {"match": TEAM_A, "replication.factor.min": 2, "replication.factor.max": 3,
         "partitions.max": 12, "budget.partitions": BUDGET,
         "configs": {"min.insync.replicas": {"min": 2}, "retention.ms": {"max": 604800000}},
         "enforcement": "enforce"},
        {"match": r"team-b\..*", "partitions.min": 2, "replication.factor.max": 2},
        {"match": r"loose\..*", "partitions.max": 2, "enforcement": "audit"},
    ],
    "principals": {"User:cruise-control": {"exempt": ["topic.rules"]}},
}


# What team-a's "configs" bounds ask for; a create that leaves them out is judged at the brokers'
# defaults (min.insync.replicas 1), so every team-a create meant to pass sets them.
TEAM_A_CONFIGS = {"min.insync.replicas": "2", "retention.ms": "86400000"}


def name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


class Guard(CW):
    def write_rules(self) -> None:
        self.write_policy(self.policy_file, {b: 1000 for b in (1, 2, 3)}, **RULES)

    def create_configured(self, sidecar: int, topic: str, partitions: int, rf: int,
                          configs: dict[str, str]) -> tuple[int, str | None]:
        """CreateTopics v5 with topic configs, as a raw frame to the chosen sidecar."""
        item = (clients._cstr(topic) + struct.pack(">ih", partitions, rf) + clients._carr([])
                + clients._carr([clients._cstr(k) + clients._cstr(v) + clients.NO_TAGS
                                 for k, v in configs.items()]) + clients.NO_TAGS)
        body = clients._carr([item]) + struct.pack(">i?", 30000, False) + clients.NO_TAGS
        reply = clients.raw_call(self.port(sidecar), clients._flex_request(19, 5, 1, body))
        (got, code, msg), = clients.parse_create_topics_v5(reply)
        assert got == topic
        return code, msg

    def exists(self, topic: str) -> bool:
        return self.partitions(topic) is not None

    def team_a_partitions(self) -> int:
        md = self.direct_metadata()
        return sum(len(t["partitions"]) for t in md["topics"]
                   if re.fullmatch(TEAM_A, t["name"]) and t["error"] == 0)

    def metric(self, sidecar: int, family: str, **labels: str) -> float:
        status, _, body = http(self.c.node(sidecar).admin_port, "GET", "/metrics")
        assert status == 200
        total = 0.0
        for line in body.decode().splitlines():
            if line.startswith(family + "{") and all(f'{k}="{v}"' in line
                                                     for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total


@pytest.fixture(scope="module")
def g(request):
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="kadmit-guard-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + OFFSET)
    busy = [p for n in c.nodes
            for p in (n.sidecar_port, n.admin_port, n.client_port, n.direct_port) if port_open(p)]
    if busy:
        pytest.fail(f"ports {busy} are already in use (set KADMIT_TEST_PORT_BASE)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    e = Guard(d, c, Sidecars(c, binary))
    with own_cluster(d, c, e.sc, "guardrails", request):
        e.java = clients.java_build_admission_client(c.home, d / "java")
        c.start()
        e.write_rules()
        for s in e.sc.items:
            e.spawn(s, ready=False)
        for s in e.sc.items:
            wait_ready(s.node.admin_port, timeout=60)
        # kadmit's own ledger topic is created under the rules: its name breaks the pattern.
        deadline = time.monotonic() + 30
        while e.partitions("__kadmit_ledger") is None:
            assert time.monotonic() < deadline, "no ledger topic:\n" + e.sc.diagnostics()
            time.sleep(0.2)
        c.wait_topic_healthy("__kadmit_ledger")
        e.warm_up()
        yield e


@pytest.fixture(autouse=True)
def _sidecars_healthy(g):
    yield
    g.sc.check()


def rdk_create(g: Guard, topics: list) -> dict[str, tuple[int, str | None]]:
    """One CreateTopics request from confluent-kafka (librdkafka), topic configs included."""
    admin = AdminClient({"bootstrap.servers": g.c.bootstrap})
    return clients.rdk_results(admin.create_topics(topics, operation_timeout=30,
                                                   request_timeout=60))


def output(p) -> str:
    """What a CLI tool printed, both streams (kafka-topics reports errors on either)."""
    return (p.stdout or b"").decode(errors="replace") + (p.stderr or b"").decode(errors="replace")


def refused(code: int, msg: str | None, *fragments: str) -> None:
    assert code == POLICY_VIOLATION, (code, msg)
    for f in fragments:
        assert msg is not None and f in msg, f"{f!r} not in {msg!r}"


def test_name_pattern_refuses_kafka_topics_and_admits_a_conforming_name(g: Guard):
    bad, good = name("Bad_"), name("good.")
    p = clients.topics(g.c.bootstrap, "--create", "--topic", bad, "--partitions", "1",
                       "--replication-factor", "1", check=False)
    out = output(p)
    assert p.returncode != 0, out
    assert "PolicyViolationException" in out, out
    assert f"Topic name '{bad}' does not match topic.name.pattern '^[a-z0-9][a-z0-9._-]*$'. " \
           "Choose a name that matches it." in out, out
    assert not g.exists(bad)
    clients.create_topic(g.c.bootstrap, good, 1, 1)
    assert g.exists(good)


def test_replication_factor_below_the_rule_refused_by_the_java_admin_client(g: Guard):
    low, ok = name("team-a.low"), name("team-a.ok")
    got = clients.java_create_topics(g.c.home, g.java, g.c.bootstrap, [(low, 1, 1)])
    assert got[low].startswith(
        "ERROR PolicyViolationException: replication factor 1 is below the minimum 2 of rule "
        f"'team-a\\..*'. Create topic '{low}' with a replication factor of at least 2."), got
    assert rdk_create(g, [NewTopic(ok, 1, 2, config=TEAM_A_CONFIGS)])[ok] == (0, None)
    g.wait_topics([ok])
    assert not g.exists(low)


def test_replication_factor_above_the_rule_and_the_broker_default_judged(g: Guard):
    explicit, dflt, ok = name("team-b.rf"), name("team-b.dflt"), name("team-b.ok")
    got = clients.rdk_create_topics(g.c.bootstrap, [(explicit, 2, 3), (ok, 2, 2)])
    refused(*got[explicit], "replication factor 3 is above the maximum 2 of rule 'team-b\\..*'",
            "with a replication factor of at most 2")
    assert got[ok] == (0, None), got
    # No --replication-factor: -1, judged at the broker's default.replication.factor of 3.
    p = clients.topics(g.c.bootstrap, "--create", "--topic", dflt, "--partitions", "2",
                       check=False)
    assert p.returncode != 0 and "replication factor 3 (the broker's default.replication.factor)" \
        " is above the maximum 2 of rule 'team-b\\..*'" in output(p), output(p)
    assert not g.exists(explicit) and not g.exists(dflt)


def test_partition_counts_outside_the_rules_refused_also_at_the_broker_default(g: Guard):
    wide, ok, few = name("team-a.wide"), name("team-a.p"), name("team-b.few")
    got = rdk_create(g, [NewTopic(wide, 13, 2, config=TEAM_A_CONFIGS),
                         NewTopic(ok, 2, 2, config=TEAM_A_CONFIGS)])
    refused(*got[wide], "partition count 13 is above the maximum 12 of rule 'team-a\\..*'",
            f"Create topic '{wide}' with at most 12 partitions.")
    assert got[ok] == (0, None), got
    # No --partitions: the broker's num.partitions (1) is below team-b's minimum of 2.
    p = clients.topics(g.c.bootstrap, "--create", "--topic", few, "--replication-factor", "2",
                       check=False)
    assert p.returncode != 0 and "partition count 1 (the broker's num.partitions) is below the " \
        "minimum 2 of rule 'team-b\\..*'" in output(p), output(p)
    # Growing past partitions.max is refused too; within it is not.
    g.wait_topics([ok])
    got = clients.rdk_create_partitions(g.c.bootstrap, {ok: 13})
    refused(*got[ok], f"Growing topic '{ok}' to 13 partitions goes above the maximum 12")
    assert len(g.partitions(ok)) == 2
    assert not g.exists(wide) and not g.exists(few)


def test_budget_is_used_up_across_two_sidecars(g: Guard):
    """team-a's 20 partitions: fill through sidecar 1 to 3 short of the budget, then sidecar 2
    admits 2 more at once (it counts sidecar 1's admissions through the ledger before its own
    view shows them), and refuses the next 2 with the budget's message."""
    g.settle([1, 2, 3])
    used = g.team_a_partitions()
    assert used < BUDGET - 3, used
    fill = []
    while used + 3 < BUDGET:
        n = min(12, BUDGET - 3 - used)
        t = name("team-a.fill")
        code, msg = g.create_configured(1, t, n, 2, TEAM_A_CONFIGS)
        assert code == 0, msg
        fill.append(t)
        used += n
    first, second, third = name("team-a.s2a"), name("team-a.s2b"), name("team-a.s2c")
    code, msg = g.create_configured(1, first, 1, 2, TEAM_A_CONFIGS)
    assert code == 0, msg
    code, msg = g.create_configured(2, second, 2, 2, TEAM_A_CONFIGS)  # 20 exactly
    assert code == 0, msg
    code, msg = g.create_configured(2, third, 2, 2, TEAM_A_CONFIGS)
    refused(code, msg, f"Topic '{third}' would add 2 partitions to rule 'team-a\\..*', whose "
            f"topics already have {BUDGET} of its budget.partitions {BUDGET}. The budget is used "
            "up: delete topics it covers, or raise its budget.partitions.")
    g.wait_topics(fill + [first, second])
    assert not g.exists(third)
    assert g.team_a_partitions() == BUDGET
    # Every client hears the same: kafka-topics, through whichever sidecar it reaches.
    p = clients.topics(g.c.bootstrap, "--create", "--topic", third, "--partitions", "1",
                       "--replication-factor", "2",
                       *[a for k, v in TEAM_A_CONFIGS.items() for a in ("--config", f"{k}={v}")],
                       check=False)
    assert p.returncode != 0 and "PolicyViolationException" in output(p), output(p)
    assert f"budget.partitions {BUDGET}. The budget is used up" in output(p), output(p)
    assert g.metric(2, "kadmit_admission_decisions_total", decision="reject",
                    reason="rule_budget") >= 1


def test_audit_rule_admits_what_it_flags_and_counts_it(g: Guard):
    loose = name("loose.")
    before = g.metric(1, "kadmit_admission_decisions_total", decision="audit",
                      reason="rule_partitions")
    code, msg = g.create(1, loose, 4, 1)
    assert code == 0, msg
    g.wait_topics([loose])
    assert len(g.partitions(loose)) == 4
    assert g.metric(1, "kadmit_admission_decisions_total", decision="audit",
                    reason="rule_partitions") == before + 1
    # The limits still follow the policy's enforcement: no rule makes a broker overflow.
    md = kafka_wire.metadata("127.0.0.1", g.c.node(1).direct_port, timeout=10, topics=[loose])
    assert md["topics"][0]["error"] == 0
