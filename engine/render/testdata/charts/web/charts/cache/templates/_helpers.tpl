{{- define "cache.name" -}}
{{ .Release.Name }}-cache
{{- end -}}
