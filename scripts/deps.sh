#!/usr/bin/env bash
# Install the Debian 12 packages kadmit needs to build and test, skipping those already
# installed. Runs apt-get update once, and only when something is missing. Uses sudo only
# when not root.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev
    libuv1-dev libjansson-dev libcmocka-dev libssl-dev node-llhttp librdkafka-dev libpcre2-dev
    kcat haproxy gnuplot-nox yamllint shellcheck iproute2
    prometheus chromium # promtool and a real server (lint-deploy, test_prometheus); test_status_page
)
python3 -c 'import pytest' 2>/dev/null || packages+=(python3-pytest)
command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
command -v javap >/dev/null || packages+=(openjdk-17-jdk-headless) # protocol/gen reads the error codes with javap
command -v openssl >/dev/null || packages+=(openssl) # test certificates (tls_certs.py)
command -v mvn >/dev/null || packages+=(maven)
python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)

# From PyPI, pinned, as "import-name package==version":
#   confluent-kafka    librdkafka's admin API (test_admission_librdkafka.py, test_policy_reload.py)
#   prometheus-client  a real Prometheus text-format parser for /metrics (test_admin_http.py)
#   jsonschema         docs/policy.schema.json against the example policies (test_policy_schema)
#   PyYAML             the Kubernetes manifests (test_container_runtime.py)
#   kafka-python       a client of the client matrix (test_matrix_clients.py)
#   pytest-xdist       the matrix stage runs its files two at a time (scripts/test.sh)
python_packages=(
    "confluent_kafka confluent-kafka==2.16.1"
    "prometheus_client prometheus-client==0.26.0"
    "jsonschema jsonschema==4.26.0"
    "yaml PyYAML==6.0.3"
    "kafka kafka-python==3.0.12"
    "xdist pytest-xdist==3.8.0"
)
python_deps() {
    local entry module spec
    for entry in "${python_packages[@]}"; do
        read -r module spec <<<"$entry"
        python3 -c "import $module" 2>/dev/null && continue
        echo "deps.sh: installing $spec (pip)"
        PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
            python3 -m pip install --quiet "$spec"
    done
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
