{{/* The objects' base name: <release>-namesrv, cut to what a DNS label takes. */}}
{{- define "namesrv.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "namesrv.headless" -}}
{{- printf "%s-peers" (include "namesrv.fullname" .) -}}
{{- end -}}

{{- define "namesrv.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "namesrv.labels" -}}
{{ include "namesrv.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* preStop + drain + a margin, unless set; a value that leaves no room for the drain is refused. */}}
{{- define "namesrv.grace" -}}
{{- $s := .Values.shutdown -}}
{{- $need := add $s.preStopSleepSeconds $s.shutdownWaitTimeSeconds -}}
{{- if $s.terminationGracePeriodSeconds -}}
{{- if le (int $s.terminationGracePeriodSeconds) (int $need) -}}
{{- fail (printf "shutdown.terminationGracePeriodSeconds (%v) must be larger than preStopSleepSeconds + shutdownWaitTimeSeconds (%v): the kubelet would kill the server mid-drain" $s.terminationGracePeriodSeconds $need) -}}
{{- end -}}
{{- $s.terminationGracePeriodSeconds -}}
{{- else -}}
{{- add $need 10 -}}
{{- end -}}
{{- end -}}

{{/* namesrvPeers: every pod of the StatefulSet by its stable DNS name under the headless Service. */}}
{{- define "namesrv.peers" -}}
{{- $names := list -}}
{{- range $i := until (int .Values.replicas) -}}
{{- $names = append $names (printf "%s-%d.%s.%s.svc.%s:%v" (include "namesrv.fullname" $) $i (include "namesrv.headless" $) $.Release.Namespace $.Values.clusterDomain $.Values.ports.remoting) -}}
{{- end -}}
{{- join ";" $names -}}
{{- end -}}

{{/* The probes' scheme: the HTTP endpoint speaks TLS only under tls.server.mode=enforcing (the kubelet does not
verify the certificate). It cannot present a client certificate, so requiring one there would fail every probe. */}}
{{- define "namesrv.probeScheme" -}}
{{- if and .Values.tls.enabled (eq .Values.tls.mode "enforcing") -}}
{{- if .Values.tls.requireClientCerts -}}
{{- fail "tls.requireClientCerts with tls.mode=enforcing: the HTTP endpoint would demand a client certificate, which the kubelet's /ready and /health probes cannot present; use tls.mode=permissive (probes over plain HTTP)" -}}
{{- end -}}
HTTPS
{{- else -}}
HTTP
{{- end -}}
{{- end -}}
