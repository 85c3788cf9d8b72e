{{- define "sepp.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "sepp.peers" -}}{{ .Release.Name }}-peers{{- end -}}
{{- define "sepp.labels" -}}
app.kubernetes.io/name: sepp
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "sepp.selector" -}}
app.kubernetes.io/name: sepp
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "sepp.tokenSecret" -}}
{{- if .Values.auth.existingSecret }}{{ .Values.auth.existingSecret }}{{ else }}{{ .Release.Name }}-token{{ end -}}
{{- end -}}
{{- define "sepp.scheme" -}}{{ if .Values.tls.existingSecret }}HTTPS{{ else }}HTTP{{ end }}{{- end -}}
