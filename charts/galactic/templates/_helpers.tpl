{{- define "galactic.labels" -}}
app.kubernetes.io/part-of: galactic
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "galactic.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
