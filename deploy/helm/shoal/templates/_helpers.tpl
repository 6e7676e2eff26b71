{{/* Names and labels shared by every object. */}}
{{- define "shoal.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "shoal.labels" -}}
app.kubernetes.io/name: shoal
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: pass (dict "root" $ "component" "ingress"). */}}
{{- define "shoal.selector" -}}
app.kubernetes.io/name: shoal
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* An image of the release: pass (dict "root" $ "name" "ingress"). */}}
{{- define "shoal.image" -}}
{{- printf "%s/shoal-%s:%s" .root.Values.image.registry .name (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- end -}}

{{/* The NATS servers as seeds, every one named: clients move between them. */}}
{{- define "shoal.natsUrl" -}}
{{- $name := include "shoal.fullname" . -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.nats.replicas) -}}
{{- $urls = append $urls (printf "nats://%s-nats-%d.%s-nats-headless:4222" $name $i $name) -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}

{{/*
Environment every Shoal container shares: NATS (its own user), the ops port for metrics and
probes, the catalog and the hardware profile's bundle when the values override the built-in
ones. Pass (dict "root" $ "user" "ingress" "profile" "cpu").
*/}}
{{- define "shoal.commonEnv" -}}
- name: NATS_URL
  value: {{ include "shoal.natsUrl" .root | quote }}
- name: NATS_USER
  value: {{ .user | quote }}
- name: NATS_PASSWORD_FILE
  value: /etc/shoal/nats/{{ .user }}
- name: SHOAL_METRICS_PORT
  value: {{ .root.Values.opsPort | quote }}
- name: SHOAL_METRICS_HOST
  value: "0.0.0.0"
{{- if .root.Values.catalog }}
- name: SHOAL_CATALOG
  value: /etc/shoal/catalog/catalog.json
{{- end }}
{{- $profile := default "cpu" .profile }}
{{- if hasKey .root.Values.bundles $profile }}
- name: SHOAL_BUNDLE
  value: /etc/shoal/bundles/{{ $profile }}.json
{{- end }}
{{- end -}}

{{/* Mounts of every Shoal container: its NATS password, catalog and bundles. Pass (dict "root" $ "user" "ingress"). */}}
{{- define "shoal.commonMounts" -}}
- name: nats-password-{{ .user }}
  mountPath: /etc/shoal/nats
  readOnly: true
{{- if .root.Values.catalog }}
- name: catalog
  mountPath: /etc/shoal/catalog
  readOnly: true
{{- end }}
{{- if .root.Values.bundles }}
- name: bundles
  mountPath: /etc/shoal/bundles
  readOnly: true
{{- end }}
{{- end -}}

{{/* The volume of one NATS user's password. Pass (dict "root" $ "user" "ingress"). */}}
{{- define "shoal.passwordVolume" -}}
- name: nats-password-{{ .user }}
  secret:
    secretName: {{ .root.Values.nats.auth.existingSecret }}
    defaultMode: 0400
    items:
      - key: {{ .user }}
        path: {{ .user }}
{{- end -}}

{{/* The catalog and bundle volumes, when the values override the built-in ones. */}}
{{- define "shoal.configVolumes" -}}
{{- if .Values.catalog }}
- name: catalog
  configMap:
    name: {{ include "shoal.fullname" . }}-catalog
{{- end }}
{{- if .Values.bundles }}
- name: bundles
  configMap:
    name: {{ include "shoal.fullname" . }}-bundles
{{- end }}
{{- end -}}

{{/* Volumes of a pod with one Shoal container: pass (dict "root" $ "user" "ingress"). */}}
{{- define "shoal.commonVolumes" -}}
{{ include "shoal.passwordVolume" . }}
{{ include "shoal.configVolumes" .root }}
{{- end -}}

{{/* Liveness and readiness on the ops port: alive while it answers, ready per /readyz. */}}
{{- define "shoal.probes" -}}
livenessProbe:
  httpGet: { path: /healthz, port: ops }
  periodSeconds: 10
  failureThreshold: 3
readinessProbe:
  httpGet: { path: /readyz, port: ops }
  periodSeconds: 2
  failureThreshold: 2
startupProbe:
  httpGet: { path: /healthz, port: ops }
  periodSeconds: 1
  failureThreshold: 60
{{- end -}}

{{- define "shoal.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: { drop: [ALL] }
{{- end -}}

{{- define "shoal.podAnnotations" -}}
{{- if .Values.metrics.annotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.opsPort | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}
