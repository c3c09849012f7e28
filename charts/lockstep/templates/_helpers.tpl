{{- define "lockstep.name" -}}
{{- default "lockstep" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object name: the release name when it already says lockstep. */}}
{{- define "lockstep.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains (include "lockstep.name" .) .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "lockstep.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lockstep.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "lockstep.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "lockstep.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lockstep.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "lockstep.hubSelectorLabels" -}}
app.kubernetes.io/name: {{ include "lockstep.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: hub
{{- end -}}

{{- define "lockstep.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "lockstep.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "lockstep.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "lockstep.webhookService" -}}
{{- printf "%s-webhook" (include "lockstep.fullname" .) -}}
{{- end -}}

{{- define "lockstep.certSecret" -}}
{{- default (printf "%s-webhook-server-cert" (include "lockstep.fullname" .)) .Values.webhook.certificates.secretName -}}
{{- end -}}

{{- define "lockstep.mutatingWebhookConfiguration" -}}
{{- printf "%s-mutating-webhook-configuration" (include "lockstep.fullname" .) -}}
{{- end -}}

{{- define "lockstep.validatingWebhookConfiguration" -}}
{{- printf "%s-validating-webhook-configuration" (include "lockstep.fullname" .) -}}
{{- end -}}

{{- define "lockstep.certificate" -}}
{{- printf "%s-webhook" (include "lockstep.fullname" .) -}}
{{- end -}}

{{- define "lockstep.fleetValidatingWebhookConfiguration" -}}
{{- printf "%s-fleet-validating-webhook-configuration" (include "lockstep.fullname" .) -}}
{{- end -}}

{{/* The hub's fleet namespace: where members' kubeconfig Secrets live. */}}
{{- define "lockstep.fleetNamespace" -}}
{{- default .Release.Namespace .Values.hub.fleetNamespace -}}
{{- end -}}
