{{- define "engram.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "engram.labels" -}}
app.kubernetes.io/name: engram-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "engram.selector" -}}
app.kubernetes.io/name: engram-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "engram.serviceAccount" -}}
{{- default (include "engram.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "engram.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The admin DSN of instance number N reaches the operator as this variable. */}}
{{- define "engram.dsnVariable" -}}
{{- printf "ENGRAM_INSTANCE_%d_ADMIN_DSN" . -}}
{{- end -}}

{{- define "engram.rootCertVariable" -}}
{{- printf "ENGRAM_INSTANCE_%d_ROOT_CERT" . -}}
{{- end -}}

{{/* What the operator does, and no more (checked against its calls in tests/operator/test_rbac.py). */}}
{{- define "engram.rules" -}}
- apiGroups: [memory.engram.dev]
  resources: [memorytenants]
  verbs: [get, list, watch, patch]
- apiGroups: [memory.engram.dev]
  resources: [memorytenants/status]
  verbs: [patch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [secrets, services]
  verbs: [get, create, patch, delete]
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [get, create, patch, delete]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies, ingresses]
  verbs: [get, create, patch, delete]
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: [get, create, patch, delete]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, create, patch, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- end -}}
