{{- define "galactic.labels" -}}
app.kubernetes.io/part-of: galactic
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "galactic.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{/* The EgressShards' namespace: the translator's egress.shardNamespace (upstream galactic-system), else the release's. */}}
{{- define "galactic.egressShardNamespace" -}}
{{- $t := .Values.translator | default dict -}}
{{- $e := $t.egress | default dict -}}
{{- $e.shardNamespace | default .Release.Namespace -}}
{{- end -}}
