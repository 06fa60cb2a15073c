{{- /* A library chart that modules link to by an absolute path. */ -}}
{{- define "lib_module_labels" -}}
labels:
  module: {{ .Chart.Name }}
  heritage: realtree
{{- end -}}
