{{/* Labels on every object: the Kustomize base's, and Helm's own. */}}
{{- define "kadmit.labels" -}}
app.kubernetes.io/part-of: kafka
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kadmit.selector" -}}
app.kubernetes.io/name: {{ .Values.name }}
{{- end -}}

{{/* 0@kafka-0.kafka-headless.$(POD_NAMESPACE).svc:9094,1@... */}}
{{- define "kadmit.voters" -}}
{{- $n := .Values.name -}}
{{- $voters := list -}}
{{- range $i := until (int .Values.replicas) -}}
{{- $voters = append $voters (printf "%d@%s-%d.%s-headless.$(POD_NAMESPACE).svc:9094" $i $n $i $n) -}}
{{- end -}}
{{- join "," $voters -}}
{{- end -}}

{{/* The one check of `mode`, so a typo renders nothing rather than half a deployment. */}}
{{- define "kadmit.mode" -}}
{{- if not (has .Values.mode (list "sidecar" "gateway")) -}}
{{- fail (printf "mode must be sidecar or gateway, not %q" (toString .Values.mode)) -}}
{{- end -}}
{{- .Values.mode -}}
{{- end -}}

{{/* Gateway mode: the Service port of broker id $id, from portMap or portBase + id. */}}
{{- define "kadmit.gatewayPort" -}}
{{- $g := .root.Values.gateway -}}
{{- $m := $g.portMap | default dict -}}
{{- if hasKey $m (toString .id) -}}
{{- get $m (toString .id) | int -}}
{{- else -}}
{{- add (int $g.portBase) (int .id) -}}
{{- end -}}
{{- end -}}

{{/* Gateway mode: the DNS name responses carry; the Service's unless set. */}}
{{- define "kadmit.advertiseHost" -}}
{{- .Values.gateway.advertiseHost | default (printf "%s.%s.svc" .Values.name .Release.Namespace) -}}
{{- end -}}

{{/* Gateway mode: the ports of `gateway.bootstrap`, as a JSON list. */}}
{{- define "kadmit.bootstrapPorts" -}}
{{- $ports := list -}}
{{- range $a := splitList "," .Values.gateway.bootstrap -}}
{{- $hp := splitList ":" (trim $a) -}}
{{- $ports = append $ports (last $hp | int) -}}
{{- end -}}
{{- $ports | uniq | toJson -}}
{{- end -}}

{{/* Gateway mode: --gateway-port-map for every listed broker id, 0=9100,1=9101,... */}}
{{- define "kadmit.gatewayPortMap" -}}
{{- $pairs := list -}}
{{- range $id := .Values.gateway.brokerIds -}}
{{- $pairs = append $pairs (printf "%v=%s" $id (include "kadmit.gatewayPort" (dict "root" $ "id" $id))) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* Gateway mode: where kadmit's own clients bootstrap, a name the gateway certificate covers. */}}
{{- define "kadmit.ledgerBootstrap" -}}
{{- $g := .Values.gateway -}}
{{- if $g.ledgerBootstrap -}}
{{- $g.ledgerBootstrap -}}
{{- else if eq $g.routing "sni" -}}
{{- printf "bootstrap.%s:%v" $g.sniDomain $g.listenPort -}}
{{- else -}}
{{- printf "%s:%v" (include "kadmit.advertiseHost" .) $g.listenPort -}}
{{- end -}}
{{- end -}}

{{/* Gateway mode, routing ports: fail on a port outside 1-65535 or used twice (two broker
ids on one port, or a broker on the bootstrap or admin port), which Kubernetes would accept
for containerPorts and only half-reject for the Service. */}}
{{- define "kadmit.gatewayPortsCheck" -}}
{{- $g := .Values.gateway -}}
{{- $seen := dict (toString $g.listenPort) "bootstrap (listenPort)" "9644" "the admin port" -}}
{{- if and (not $g.portMap) (ge (int $g.listenPort) (int $g.portBase)) -}}
{{- fail (printf "gateway.listenPort %v must be below gateway.portBase %v (kadmit refuses it)" $g.listenPort $g.portBase) -}}
{{- end -}}
{{- range $id := $g.brokerIds -}}
{{- if or (not (has (kindOf $id) (list "float64" "int64" "int"))) (lt (int $id) 0) (ne (toString (int $id)) (toString $id)) -}}
{{- fail (printf "gateway.brokerIds: %v is not a broker id (a number 0 or above)" $id) -}}
{{- end -}}
{{- $p := include "kadmit.gatewayPort" (dict "root" $ "id" $id) -}}
{{- if or (lt (int $p) 1) (gt (int $p) 65535) -}}
{{- fail (printf "gateway: broker %v would be served at port %s, outside 1-65535" $id $p) -}}
{{- end -}}
{{- if hasKey $seen $p -}}
{{- fail (printf "gateway: broker %v and %s are both at port %s" $id (get $seen $p) $p) -}}
{{- end -}}
{{- $_ := set $seen $p (printf "broker %v" $id) -}}
{{- end -}}
{{- end -}}
