"""Admission through kadmit as librdkafka's admin API sees it: confluent-kafka's AdminClient
(which bundles librdkafka) against a real 3-broker KRaft cluster whose sidecars run a policy.

librdkafka bootstraps the sidecar ports only, and the brokers advertise the sidecars, so every
admin request goes through a kadmit sidecar (checked in each test). The cluster and the policy
helpers are those of test_admission_e2e.py (`Adm`, limits = current + headroom); this module
starts its own cluster on the same ports ($KADMIT_TEST_PORT_BASE + 100), after that module's has
stopped. confluent-kafka is installed by scripts/deps.sh; without it the tests fail.
"""

from __future__ import annotations

import gc
import re
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import clients  # noqa: E402
from kafka_cluster import KafkaCluster, Sidecars, kadmit_bin, own_cluster, port_base  # noqa: E402
from test_admission_e2e import REJECT, Adm, assert_within, name  # noqa: E402

try:
    import confluent_kafka
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
except ImportError as e:  # fail (not skip) in each test, before starting a cluster
    confluent_kafka = None
    IMPORT_ERROR = str(e)

WILL_EXCEED = 88  # kadmit's reject.error.code (KIP-578); librdkafka calls it UNSTABLE_OFFSET_COMMIT
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def adm(request):
    if confluent_kafka is None:
        yield None
        return
    binary = kadmit_bin()
    if not binary.exists():
        pytest.fail(f"kadmit binary not found at {binary} (set KADMIT_BIN)", pytrace=False)
    clients.run(["bash", str(HERE.parent / "kafka" / "fetch.sh")], timeout=600)
    d = Path(tempfile.mkdtemp(prefix="kadmit-rdk-"))
    c = KafkaCluster(d, brokers=3, port_base_=port_base() + 100)  # as test_admission_e2e
    sc = Sidecars(c, binary)
    with own_cluster(d, c, sc, "librdkafka admission", request):
        c.start()
        a = Adm(c, sc, java_dir=d)
        a.apply_policy({1: 1000, 2: 1000, 3: 1000})
        yield a


@pytest.fixture(autouse=True)
def _sidecars_alive(request):
    yield
    a = request.getfixturevalue("adm") if "adm" in request.fixturenames else None
    if a is not None:
        probs = a.sc.problems()
        assert not probs, "\n".join(probs) + "\n" + a.sc.diagnostics()


@pytest.fixture
def admin(adm):
    """admin(headroom) -> (limits, AdminClient): applies the policy (restarting the sidecars),
    then makes a client bootstrapped on the sidecars, checked to see only sidecars.
    AdminClient has no close(): the clients are destroyed after the test by dropping them and
    collecting cycles."""
    made = []

    def make(headroom: dict[int, int]) -> tuple[dict[int, int], AdminClient]:
        if confluent_kafka is None:  # in the test, so that it fails rather than errors
            pytest.fail(f"confluent-kafka is not installed ({IMPORT_ERROR}): scripts/deps.sh "
                        "installs it", pytrace=False)
        limits = adm.apply_policy(headroom)
        ac = AdminClient({"bootstrap.servers": adm.bootstrap, "socket.timeout.ms": 30000})
        made.append(ac)
        brokers = ac.list_topics(timeout=TIMEOUT).brokers
        assert {b.port for b in brokers.values()} == {n.sidecar_port for n in adm.c.nodes}, \
            brokers
        return limits, ac

    yield make
    made.clear()
    gc.collect()


def error_of(future) -> "confluent_kafka.KafkaError | None":
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as e:
        return e.args[0]
    return None


def rejections(a: Adm) -> int:
    return a.logs().count("decision=reject reason=limit")


def assert_rejected(a: Adm, err, limits: dict[int, int], added: int, before: int) -> None:
    """err is error 88 with KIP-578's message naming every broker: its limit, its current count
    (limit - headroom 3) and the projected count (current + the replicas it would add)."""
    assert err is not None, "admitted, expected a rejection"
    assert err.code() == WILL_EXCEED, (err.code(), err.name(), err.str())
    msg = err.str()
    assert msg.startswith(REJECT), msg
    for b, lim in limits.items():
        cur = lim - 3
        assert re.search(rf"[ ,]{b} \(limit {lim}, current {cur}, projected {cur + added}\)",
                         msg), msg
    assert rejections(a) > before, "kadmit logged no rejection: the request bypassed the sidecars"


def test_create_topics_beyond_limit_is_error_88_within_succeeds(adm: Adm, admin):
    limits, ac = admin({1: 3, 2: 3, 3: 3})
    big, ok = name("rdk-beyond"), name("rdk-within")
    before = rejections(adm)
    fs = ac.create_topics([NewTopic(big, 4, 3)], operation_timeout=30)
    assert_rejected(adm, error_of(fs[big]), limits, 4, before)
    assert adm.topic_replicas(big) is None
    fs = ac.create_topics([NewTopic(ok, 3, 3)], operation_timeout=30)  # exactly the headroom
    assert error_of(fs[ok]) is None
    adm.c.wait_topic_healthy(ok)
    assert_within(adm, limits)


def test_create_topics_three_in_one_call_middle_rejected(adm: Adm, admin):
    limits, ac = admin({1: 3, 2: 3, 3: 3})
    a, b, c = name("rdk-a"), name("rdk-b"), name("rdk-c")
    fs = ac.create_topics([NewTopic(a, 1, 3), NewTopic(b, 10, 3), NewTopic(c, 2, 3)],
                          operation_timeout=30)
    errs = {t: error_of(f) for t, f in fs.items()}
    assert errs[a] is None and errs[c] is None, errs
    assert errs[b] is not None and errs[b].code() == WILL_EXCEED, errs
    assert errs[b].str().startswith(REJECT), errs[b].str()
    adm.c.wait_topic_healthy(a)
    adm.c.wait_topic_healthy(c)
    assert adm.topic_replicas(b) is None
    assert_within(adm, limits)


def test_create_partitions_beyond_limit_is_error_88_within_succeeds(adm: Adm, admin):
    _, ac = admin({1: 100, 2: 100, 3: 100})
    t = name("rdk-grow")
    assert error_of(ac.create_topics([NewTopic(t, 2, 3)], operation_timeout=30)[t]) is None
    adm.c.wait_topic_healthy(t)
    limits, ac = admin({1: 3, 2: 3, 3: 3})
    before = rejections(adm)
    fs = ac.create_partitions([NewPartitions(t, 6)], operation_timeout=30)
    assert_rejected(adm, error_of(fs[t]), limits, 4, before)
    assert len(adm.topic_replicas(t)) == 2
    fs = ac.create_partitions([NewPartitions(t, 5)], operation_timeout=30)
    assert error_of(fs[t]) is None
    deadline = time.monotonic() + 30
    while len(adm.topic_replicas(t)) != 5:
        assert time.monotonic() < deadline, adm.topic_replicas(t)
        time.sleep(0.2)
    assert_within(adm, limits)


def test_validate_only_beyond_limit_is_error_88_creates_nothing(adm: Adm, admin):
    limits, ac = admin({1: 3, 2: 3, 3: 3})
    big, ok = name("rdk-vbig"), name("rdk-vok")
    before = rejections(adm)
    fs = ac.create_topics([NewTopic(big, 4, 3)], operation_timeout=30, validate_only=True)
    assert_rejected(adm, error_of(fs[big]), limits, 4, before)
    fs = ac.create_topics([NewTopic(ok, 3, 3)], operation_timeout=30, validate_only=True)
    assert error_of(fs[ok]) is None
    assert adm.topic_replicas(big) is None and adm.topic_replicas(ok) is None
    assert_within(adm, limits)
