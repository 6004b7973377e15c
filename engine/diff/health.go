package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// Health is kstatus-style readiness of a live object: Missing when nil,
// Progressing while being deleted, while the controller has not observed
// the latest generation, or while a rollout is under way, Degraded when
// the object reports a failure, Healthy otherwise (including kinds with
// no status to judge).
func Health(obj *unstructured.Unstructured) status.Health {
	if obj == nil {
		return status.HealthMissing
	}
	if obj.GetDeletionTimestamp() != nil {
		return status.HealthProgressing
	}
	if has(obj, "status", "observedGeneration") && num(obj, "status", "observedGeneration") < obj.GetGeneration() {
		return status.HealthProgressing
	}
	gvk := obj.GroupVersionKind()
	switch gvk.Group + "/" + gvk.Kind {
	case "apps/Deployment":
		return deploymentHealth(obj)
	case "apps/StatefulSet":
		return statefulSetHealth(obj)
	case "apps/DaemonSet":
		return daemonSetHealth(obj)
	case "apps/ReplicaSet":
		return replicaSetHealth(obj)
	case "batch/Job":
		return jobHealth(obj)
	case "/PersistentVolumeClaim":
		return phaseHealth(obj, "Bound", "Lost")
	case "/Pod":
		return podHealth(obj)
	case "/Service":
		return serviceHealth(obj)
	case "/Namespace":
		if p := str(obj, "status", "phase"); p == "Terminating" {
			return status.HealthProgressing
		}
		return status.HealthHealthy
	case "apiextensions.k8s.io/CustomResourceDefinition":
		if c := condition(obj, "Established"); c != nil && c["status"] == "True" {
			return status.HealthHealthy
		}
		return status.HealthProgressing
	}
	return genericHealth(obj)
}

// The accessors below read status fields leniently: a field of the wrong
// type counts as absent, since health is a best judgement, not validation.

func has(obj *unstructured.Unstructured, fields ...string) bool {
	_, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	return ok && err == nil
}

func str(obj *unstructured.Unstructured, fields ...string) string {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		return ""
	}
	return s
}

func flag(obj *unstructured.Unstructured, fields ...string) bool {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return false
	}
	b, isBool := v.(bool)
	return isBool && b
}

func list(obj *unstructured.Unstructured, fields ...string) []any {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return nil
	}
	l, isList := v.([]any)
	if !isList {
		return nil
	}
	return l
}

func num(obj *unstructured.Unstructured, fields ...string) int64 {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return 0
	}
	n, isNum := number(v)
	if !isNum {
		return 0
	}
	return int64(n)
}

func specReplicas(obj *unstructured.Unstructured) int64 {
	if !has(obj, "spec", "replicas") {
		return 1
	}
	return num(obj, "spec", "replicas")
}

// condition returns the status condition of a type, or nil.
func condition(obj *unstructured.Unstructured, typ string) map[string]any {
	for _, c := range list(obj, "status", "conditions") {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

func deploymentHealth(obj *unstructured.Unstructured) status.Health {
	if c := condition(obj, "Progressing"); c != nil && c["reason"] == "ProgressDeadlineExceeded" {
		return status.HealthDegraded
	}
	if paused := flag(obj, "spec", "paused"); paused {
		return status.HealthHealthy
	}
	want := specReplicas(obj)
	if !has(obj, "status", "observedGeneration") {
		return status.HealthProgressing
	}
	updated := num(obj, "status", "updatedReplicas")
	replicas := num(obj, "status", "replicas")
	available := num(obj, "status", "availableReplicas")
	switch {
	case updated < want, replicas > updated, available < updated:
		return status.HealthProgressing
	}
	if c := condition(obj, "Available"); c != nil && c["status"] == "False" {
		return status.HealthProgressing
	}
	return status.HealthHealthy
}

func statefulSetHealth(obj *unstructured.Unstructured) status.Health {
	if !has(obj, "status", "observedGeneration") {
		return status.HealthProgressing
	}
	want := specReplicas(obj)
	if num(obj, "status", "readyReplicas") < want || num(obj, "status", "replicas") > want {
		return status.HealthProgressing
	}
	if t := str(obj, "spec", "updateStrategy", "type"); t == "OnDelete" {
		return status.HealthHealthy
	}
	cur := str(obj, "status", "currentRevision")
	upd := str(obj, "status", "updateRevision")
	if upd != "" && cur != upd {
		return status.HealthProgressing
	}
	return status.HealthHealthy
}

func daemonSetHealth(obj *unstructured.Unstructured) status.Health {
	if !has(obj, "status", "observedGeneration") {
		return status.HealthProgressing
	}
	desired := num(obj, "status", "desiredNumberScheduled")
	if num(obj, "status", "updatedNumberScheduled") < desired || num(obj, "status", "numberAvailable") < desired {
		return status.HealthProgressing
	}
	return status.HealthHealthy
}

func replicaSetHealth(obj *unstructured.Unstructured) status.Health {
	if c := condition(obj, "ReplicaFailure"); c != nil && c["status"] == "True" {
		return status.HealthDegraded
	}
	want := specReplicas(obj)
	if num(obj, "status", "availableReplicas") < want || num(obj, "status", "readyReplicas") < want {
		return status.HealthProgressing
	}
	return status.HealthHealthy
}

func jobHealth(obj *unstructured.Unstructured) status.Health {
	if c := condition(obj, "Failed"); c != nil && c["status"] == "True" {
		return status.HealthDegraded
	}
	if c := condition(obj, "Complete"); c != nil && c["status"] == "True" {
		return status.HealthHealthy
	}
	if suspended := flag(obj, "spec", "suspend"); suspended {
		return status.HealthHealthy
	}
	return status.HealthProgressing
}

func phaseHealth(obj *unstructured.Unstructured, good, bad string) status.Health {
	p := str(obj, "status", "phase")
	switch p {
	case good:
		return status.HealthHealthy
	case bad:
		return status.HealthDegraded
	}
	return status.HealthProgressing
}

func podHealth(obj *unstructured.Unstructured) status.Health {
	p := str(obj, "status", "phase")
	switch p {
	case "Succeeded":
		return status.HealthHealthy
	case "Failed":
		return status.HealthDegraded
	case "Running":
		if c := condition(obj, "Ready"); c != nil && c["status"] == "True" {
			return status.HealthHealthy
		}
	}
	return status.HealthProgressing
}

func serviceHealth(obj *unstructured.Unstructured) status.Health {
	if t := str(obj, "spec", "type"); t != "LoadBalancer" {
		return status.HealthHealthy
	}
	ing := list(obj, "status", "loadBalancer", "ingress")
	if len(ing) == 0 {
		return status.HealthProgressing
	}
	return status.HealthHealthy
}

// genericHealth follows kstatus for kinds it does not know: a Stalled
// condition is a failure, Reconciling or a Ready that is not True is
// progress, anything else is healthy.
func genericHealth(obj *unstructured.Unstructured) status.Health {
	if c := condition(obj, "Stalled"); c != nil && c["status"] == "True" {
		return status.HealthDegraded
	}
	if c := condition(obj, "Reconciling"); c != nil && c["status"] == "True" {
		return status.HealthProgressing
	}
	if c := condition(obj, "Ready"); c != nil && c["status"] != "True" {
		return status.HealthProgressing
	}
	return status.HealthHealthy
}
