"""pytest for the fault-injection suite: its marker (scripts/test.sh selects it with -m faults)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "faults: the fault-injection suite's short run (about 5 "
                            "minutes: its own 3-broker cluster, one of each fault)")
