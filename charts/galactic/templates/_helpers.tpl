{{- define "galactic.labels" -}}
app.kubernetes.io/part-of: galactic
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* An image reference: "galactic.image" (list $ .Values.image.agent) */}}
{{- define "galactic.image" -}}
{{- $root := index . 0 -}}
{{- $img := index . 1 -}}
{{- $reg := $root.Values.image.registry -}}
{{- if $reg }}{{ trimSuffix "/" $reg }}/{{ end }}{{ $img.repository }}:{{ $img.tag | default $root.Chart.AppVersion }}
{{- end -}}

{{/* The EgressShards' namespace: the translator's egress.shardNamespace (upstream galactic-system), else the release's. */}}
{{- define "galactic.egressShardNamespace" -}}
{{- $t := .Values.translator | default dict -}}
{{- $e := $t.egress | default dict -}}
{{- $e.shardNamespace | default .Release.Namespace -}}
{{- end -}}

{{- define "galactic.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
