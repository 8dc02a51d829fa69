{{/* The name of the scheduler's objects: <release>-scheduler, or fullnameOverride. */}}
{{- define "phalanx.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-scheduler" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The ConfigMap holding the PhalanxConfiguration: <release>-config. */}}
{{- define "phalanx.configName" -}}
{{- printf "%s-config" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The namespace of the namespaced objects. */}}
{{- define "phalanx.namespace" -}}
{{- .Values.namespace | default .Release.Namespace -}}
{{- end -}}

{{- define "phalanx.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "phalanx.fullname" .) -}}
{{- end -}}

{{/* Selector labels: the Deployment's pods and the metrics Service. */}}
{{- define "phalanx.selectorLabels" -}}
app.kubernetes.io/name: phalanx-scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "phalanx.labels" -}}
{{ include "phalanx.selectorLabels" . }}
app.kubernetes.io/part-of: phalanx
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The configuration file: the values' config with apiVersion and kind. */}}
{{- define "phalanx.config" -}}
{{- $cfg := dict "apiVersion" "phalanx.dev/v1alpha1" "kind" "PhalanxConfiguration" -}}
{{- range $section, $fields := .Values.config -}}
{{- if not (has $section (list "scheduling" "scheduler")) -}}
{{- fail (printf "config.%s: a PhalanxConfiguration has the sections scheduling and scheduler only" $section) -}}
{{- end -}}
{{- if $fields -}}
{{- $_ := set $cfg $section $fields -}}
{{- end -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* A duration of one unit ("15s", "500ms", "1m", "1h") in milliseconds, or "" for any other form. */}}
{{- define "phalanx.milliseconds" -}}
{{- if regexMatch "^[0-9]+(ms|s|m|h)$" . -}}
{{- $n := regexFind "^[0-9]+" . | atoi -}}
{{- $unit := regexReplaceAll "^[0-9]+" . "" -}}
{{- if eq $unit "ms" }}{{ $n }}{{ else if eq $unit "s" }}{{ mul $n 1000 }}{{ else if eq $unit "m" }}{{ mul $n 60000 }}{{ else }}{{ mul $n 3600000 }}{{ end -}}
{{- end -}}
{{- end -}}
