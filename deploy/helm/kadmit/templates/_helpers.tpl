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
