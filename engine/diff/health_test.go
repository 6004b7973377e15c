package diff

import (
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc string
		want      status.Health
	}{
		{"deployment rolled out", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, status.HealthHealthy},
		{"deployment not observed yet", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 3}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, status.HealthProgressing},
		{"deployment without status", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, spec: {replicas: 2}}`, status.HealthProgressing},
		{"deployment rolling", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1, availableReplicas: 2}}`, status.HealthProgressing},
		{"deployment stuck", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}}`, status.HealthDegraded},
		{"deployment default one replica", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, spec: {}, status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}}`, status.HealthHealthy},
		{"statefulset ready", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 2}, status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, currentRevision: a, updateRevision: a}}`, status.HealthHealthy},
		{"statefulset updating", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 2}, status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, currentRevision: a, updateRevision: b}}`, status.HealthProgressing},
		{"daemonset partial", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: x, generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2}}`, status.HealthProgressing},
		{"daemonset ready", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: x, generation: 1}, status: {observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}}`, status.HealthHealthy},
		{"replicaset failure", `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: r}, spec: {replicas: 1}, status: {conditions: [{type: ReplicaFailure, status: "True"}]}}`, status.HealthDegraded},
		{"job complete", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Complete, status: "True"}]}}`, status.HealthHealthy},
		{"job failed", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Failed, status: "True"}]}}`, status.HealthDegraded},
		{"job running", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {active: 1}}`, status.HealthProgressing},
		{"pvc bound", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, status: {phase: Bound}}`, status.HealthHealthy},
		{"pvc pending", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, status: {phase: Pending}}`, status.HealthProgressing},
		{"pvc lost", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, status: {phase: Lost}}`, status.HealthDegraded},
		{"service clusterip", `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: ClusterIP}}`, status.HealthHealthy},
		{"service lb pending", `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer}, status: {loadBalancer: {}}}`, status.HealthProgressing},
		{"service lb ready", `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer}, status: {loadBalancer: {ingress: [{ip: 1.2.3.4}]}}}`, status.HealthHealthy},
		{"custom ready false", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {conditions: [{type: Ready, status: "False"}]}}`, status.HealthProgressing},
		{"custom stalled", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {conditions: [{type: Stalled, status: "True"}]}}`, status.HealthDegraded},
		{"custom ready", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {conditions: [{type: Ready, status: "True"}]}}`, status.HealthHealthy},
		{"configmap", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`, status.HealthHealthy},
		{"being deleted", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, deletionTimestamp: "2026-12-02T10:00:00Z"}}`, status.HealthProgressing},
		{"crd established", `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: c}, status: {conditions: [{type: Established, status: "True"}]}}`, status.HealthHealthy},
		{"wrong types are lenient", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}, spec: {replicas: "x"}, status: {observedGeneration: "y", conditions: "z"}}`, status.HealthProgressing},
	}
	for _, tc := range cases {
		if got := Health(obj(t, tc.doc)); got != tc.want {
			t.Errorf("%s: Health = %s, want %s", tc.name, got, tc.want)
		}
	}
	if Health(nil) != status.HealthMissing {
		t.Error("nil must be Missing")
	}
}
