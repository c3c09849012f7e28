{{- /*
lockstep.generatedRoles renders a role file controller-gen wrote from the
code's RBAC markers (copied into files/ by make generate) for this release, with
a binding to one ServiceAccount each: the ClusterRole stays a ClusterRole; each
Role moves from the namespace its marker names to the one .namespaces maps it
to; resourceNames written with the binaries' default object names become this
release's names (.resourceNames). Nothing is added to the generated rules.
Arguments: root, file, name, namespaces, resourceNames, serviceAccount.
*/}}
{{- define "lockstep.generatedRoles" -}}
{{- $args := . }}
{{- $root := .root }}
{{- range $doc := splitList "\n---\n" ($root.Files.Get .file) }}
{{- $obj := fromYaml $doc }}
{{- if $obj.kind }}
{{- $rules := list }}
{{- range $rule := $obj.rules }}
{{- if $rule.resourceNames }}
{{- $names := list }}
{{- range $n := $rule.resourceNames }}
{{- $names = append $names (default $n (get $args.resourceNames $n)) }}
{{- end }}
{{- $_ := set $rule "resourceNames" $names }}
{{- end }}
{{- $rules = append $rules $rule }}
{{- end }}
{{- $name := $args.name }}
{{- $namespace := "" }}
{{- if eq $obj.kind "Role" }}
{{- $namespace = required (printf "%s: no namespace for the Role of %s" $args.file $obj.metadata.namespace) (get $args.namespaces $obj.metadata.namespace) }}
{{- if ne $obj.metadata.namespace "lockstep-system" }}
{{- $name = printf "%s-%s" $args.name (trimPrefix "lockstep-" $obj.metadata.namespace) }}
{{- end }}
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ $obj.kind }}
metadata:
  name: {{ $name }}
  {{- with $namespace }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "lockstep.labels" $root | nindent 4 }}
rules:
{{- toYaml $rules | nindent 0 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ $obj.kind }}Binding
metadata:
  name: {{ $name }}
  {{- with $namespace }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "lockstep.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ $obj.kind }}
  name: {{ $name }}
subjects:
- kind: ServiceAccount
  name: {{ $args.serviceAccount }}
  namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end }}
{{- end }}
