package diff

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/status"
)

// healthRule judges one kind from its live object; Judge fills in Rule.
type healthRule func(*unstructured.Unstructured) status.HealthDetail

// healthRules is kdrift's rule per kind, on top of kstatus. A new rule is
// one function here and a table test in health_rules_test.go.
var healthRules = map[schema.GroupKind]healthRule{
	{Group: "apps", Kind: "Deployment"}:                               deploymentHealth,
	{Group: "apps", Kind: "StatefulSet"}:                              statefulSetHealth,
	{Group: "apps", Kind: "DaemonSet"}:                                daemonSetHealth,
	{Group: "apps", Kind: "ReplicaSet"}:                               replicaSetHealth,
	{Group: "batch", Kind: "Job"}:                                     jobHealth,
	{Kind: "Pod"}:                                                     podHealth,
	{Kind: "Service"}:                                                 serviceHealth,
	{Kind: "Namespace"}:                                               namespaceHealth,
	{Kind: "PersistentVolumeClaim"}:                                   pvcHealth,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: crdHealth,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                     ingressHealth,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:           hpaHealth,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                    pdbHealth,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:             apiServiceHealth,
	{Group: "argoproj.io", Kind: "Rollout"}:                           rolloutHealth,
	{Group: "argoproj.io", Kind: "Application"}:                       argoApplicationHealth,
	{Group: "flagger.app", Kind: "Canary"}:                            flaggerCanaryHealth,
	{Group: "cert-manager.io", Kind: "Certificate"}:                   certificateHealth,
	{Group: "cert-manager.io", Kind: "Issuer"}:                        issuerHealth,
	{Group: "cert-manager.io", Kind: "ClusterIssuer"}:                 issuerHealth,
	{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}:     fluxHealth,
	{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}:            fluxHealth,
	{Group: "source.toolkit.fluxcd.io", Kind: "GitRepository"}:        fluxHealth,
	{Group: "source.toolkit.fluxcd.io", Kind: "OCIRepository"}:        fluxHealth,
	{Group: "source.toolkit.fluxcd.io", Kind: "HelmRepository"}:       fluxHealth,
	{Group: "source.toolkit.fluxcd.io", Kind: "HelmChart"}:            fluxHealth,
	{Group: "source.toolkit.fluxcd.io", Kind: "Bucket"}:               fluxHealth,
	{Group: "keda.sh", Kind: "ScaledObject"}:                          scaledObjectHealth,
}

func healthy(msg string) status.HealthDetail {
	return status.HealthDetail{Status: status.HealthHealthy, Message: msg}
}

func progressing(msg string) status.HealthDetail {
	return status.HealthDetail{Status: status.HealthProgressing, Message: msg}
}

func degraded(msg string) status.HealthDetail {
	return status.HealthDetail{Status: status.HealthDegraded, Message: msg}
}

func deploymentHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if c := condition(obj, "Progressing"); c != nil && c["reason"] == "ProgressDeadlineExceeded" {
		return degraded(or(condText(c), "progress deadline exceeded"))
	}
	if flag(obj, "spec", "paused") {
		return healthy("paused (spec.paused)")
	}
	want := specReplicas(obj)
	if !has(obj, "status", "observedGeneration") {
		return progressing("waiting for the deployment controller")
	}
	updated := num(obj, "status", "updatedReplicas")
	replicas := num(obj, "status", "replicas")
	available := num(obj, "status", "availableReplicas")
	switch {
	case updated < want:
		return progressing(fmt.Sprintf("%d of %d replicas updated", updated, want))
	case replicas > updated:
		return progressing(fmt.Sprintf("%d old replicas pending termination", replicas-updated))
	case available < updated:
		return progressing(fmt.Sprintf("%d of %d updated replicas available", available, updated))
	}
	if c := condition(obj, "Available"); c != nil && c["status"] == "False" {
		return progressing(or(condText(c), "not available"))
	}
	return healthy(fmt.Sprintf("%d/%d replicas available", available, want))
}

func statefulSetHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if !has(obj, "status", "observedGeneration") {
		return progressing("waiting for the statefulset controller")
	}
	want := specReplicas(obj)
	ready := num(obj, "status", "readyReplicas")
	if ready < want || num(obj, "status", "replicas") > want {
		return progressing(fmt.Sprintf("%d of %d replicas ready", ready, want))
	}
	if t := str(obj, "spec", "updateStrategy", "type"); t == "OnDelete" {
		return healthy(fmt.Sprintf("%d/%d replicas ready (OnDelete)", ready, want))
	}
	cur := str(obj, "status", "currentRevision")
	upd := str(obj, "status", "updateRevision")
	if upd != "" && cur != upd {
		return progressing(fmt.Sprintf("rolling out revision %s", upd))
	}
	return healthy(fmt.Sprintf("%d/%d replicas ready", ready, want))
}

func daemonSetHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if !has(obj, "status", "observedGeneration") {
		return progressing("waiting for the daemonset controller")
	}
	desired := num(obj, "status", "desiredNumberScheduled")
	updated := num(obj, "status", "updatedNumberScheduled")
	available := num(obj, "status", "numberAvailable")
	if updated < desired || available < desired {
		return progressing(fmt.Sprintf("%d updated, %d available of %d", updated, available, desired))
	}
	return healthy(fmt.Sprintf("%d/%d available", available, desired))
}

func replicaSetHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if c := condition(obj, "ReplicaFailure"); c != nil && c["status"] == "True" {
		return degraded(or(condText(c), "replica failure"))
	}
	want := specReplicas(obj)
	available := num(obj, "status", "availableReplicas")
	if available < want || num(obj, "status", "readyReplicas") < want {
		return progressing(fmt.Sprintf("%d of %d replicas available", available, want))
	}
	return healthy(fmt.Sprintf("%d/%d replicas available", available, want))
}

func jobHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if c := condition(obj, "Failed"); c != nil && c["status"] == "True" {
		return degraded(or(condText(c), "failed"))
	}
	if condIs(obj, "Complete", "True") {
		return healthy("complete")
	}
	if flag(obj, "spec", "suspend") {
		return healthy("suspended")
	}
	return progressing(fmt.Sprintf("running: %d active, %d succeeded", num(obj, "status", "active"), num(obj, "status", "succeeded")))
}

func pvcHealth(obj *unstructured.Unstructured) status.HealthDetail {
	switch p := str(obj, "status", "phase"); p {
	case "Bound":
		capacity := str(obj, "status", "capacity", "storage")
		return healthy(strings.TrimSpace("bound to " + str(obj, "spec", "volumeName") + " " + capacity))
	case "Lost":
		return degraded("lost: its PersistentVolume is gone")
	case "":
		return progressing("waiting for the volume controller")
	default:
		return progressing(p)
	}
}

func podHealth(obj *unstructured.Unstructured) status.HealthDetail {
	switch p := str(obj, "status", "phase"); p {
	case "Succeeded":
		return healthy("succeeded")
	case "Failed":
		return degraded(or(str(obj, "status", "message"), "failed"))
	case "Running":
		if condIs(obj, "Ready", "True") {
			return healthy("running and ready")
		}
		return progressing(or(condText(condition(obj, "Ready")), "running, not ready"))
	default:
		return progressing(or(p, "waiting for the kubelet"))
	}
}

func serviceHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if t := str(obj, "spec", "type"); t != "LoadBalancer" {
		return healthy("")
	}
	ing := list(obj, "status", "loadBalancer", "ingress")
	if len(ing) == 0 {
		return progressing("waiting for a load balancer address")
	}
	return healthy("load balancer " + address(ing[0]))
}

func namespaceHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if str(obj, "status", "phase") == "Terminating" {
		return progressing("terminating")
	}
	return healthy("")
}

func crdHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if c := condition(obj, "NamesAccepted"); c != nil && c["status"] == "False" {
		return degraded(or(condText(c), "names not accepted"))
	}
	if condIs(obj, "Established", "True") {
		return healthy("established")
	}
	return progressing("not established yet")
}

// address is a load balancer ingress entry's IP or hostname.
func address(v any) string {
	m, _ := v.(map[string]any)
	if ip, _ := m["ip"].(string); ip != "" {
		return ip
	}
	h, _ := m["hostname"].(string)
	return h
}

// ingressHealth: an Ingress is serving once its controller published an
// address (status.loadBalancer.ingress).
func ingressHealth(obj *unstructured.Unstructured) status.HealthDetail {
	ing := list(obj, "status", "loadBalancer", "ingress")
	if len(ing) == 0 {
		return progressing("no address yet: is an ingress controller serving class " + or(str(obj, "spec", "ingressClassName"), "(default)") + "?")
	}
	var addrs []string
	for _, e := range ing {
		addrs = append(addrs, address(e))
	}
	return healthy("address " + strings.Join(addrs, ", "))
}

// hpaHealth reads autoscaling/v2's conditions: AbleToScale False (it
// cannot read or write the target's scale) and ScalingActive False for a
// reason other than ScalingDisabled (metrics unreadable) are failures.
// autoscaling/v1 carries no conditions: its replica counts are all there
// is.
func hpaHealth(obj *unstructured.Unstructured) status.HealthDetail {
	counts := fmt.Sprintf("%d replicas, wants %d (min %d, max %d)", num(obj, "status", "currentReplicas"), num(obj, "status", "desiredReplicas"), minReplicas(obj), num(obj, "spec", "maxReplicas"))
	if c := condition(obj, "AbleToScale"); c != nil && c["status"] == "False" {
		return degraded("cannot scale: " + condText(c))
	}
	if c := condition(obj, "ScalingActive"); c != nil && c["status"] == "False" {
		if c["reason"] == "ScalingDisabled" {
			return healthy("scaling disabled: " + condText(c))
		}
		return degraded("scaling inactive: " + condText(c))
	}
	if condIs(obj, "AbleToScale", "True") && condIs(obj, "ScalingActive", "True") {
		if c := condition(obj, "ScalingLimited"); c != nil && c["status"] == "True" {
			return healthy(counts + "; limited: " + condText(c))
		}
		return healthy(counts)
	}
	if len(list(obj, "status", "conditions")) == 0 && has(obj, "status", "desiredReplicas") {
		return healthy(counts)
	}
	return progressing("waiting for the HPA controller")
}

func minReplicas(obj *unstructured.Unstructured) int64 {
	if !has(obj, "spec", "minReplicas") {
		return 1
	}
	return num(obj, "spec", "minReplicas")
}

// pdbHealth: fewer healthy pods than the budget wants is a failure (a
// drain will block, and so will the next rollout); a budget that allows
// no disruption with enough healthy pods says so.
func pdbHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if c := condition(obj, "DisruptionAllowed"); c != nil && c["status"] == "False" && c["reason"] == "SyncFailed" {
		return degraded(condText(c))
	}
	if !has(obj, "status", "desiredHealthy") {
		return progressing("waiting for the disruption controller")
	}
	cur, want := num(obj, "status", "currentHealthy"), num(obj, "status", "desiredHealthy")
	allowed := num(obj, "status", "disruptionsAllowed")
	if cur < want {
		return degraded(fmt.Sprintf("%d healthy pods, budget wants %d: no disruption allowed", cur, want))
	}
	if allowed == 0 {
		return healthy(fmt.Sprintf("0 disruptions allowed (%d/%d healthy): a drain of their nodes will block", cur, want))
	}
	return healthy(fmt.Sprintf("%d disruptions allowed (%d/%d healthy)", allowed, cur, want))
}

// apiServiceHealth: an aggregated API that is not Available fails every
// discovery of its group (kubectl, controllers, kdrift itself).
func apiServiceHealth(obj *unstructured.Unstructured) status.HealthDetail {
	c := condition(obj, "Available")
	switch {
	case c == nil:
		return progressing("waiting for the aggregator")
	case c["status"] == "True":
		return healthy(or(condText(c), "available"))
	}
	return degraded("unavailable: " + condText(c))
}

// certificateHealth reads cert-manager's Certificate: Ready True is a
// valid certificate; while Issuing is True it is being (re)issued; Ready
// False otherwise means it cannot be issued.
func certificateHealth(obj *unstructured.Unstructured) status.HealthDetail {
	ready := condition(obj, "Ready")
	if ready != nil && ready["status"] == "True" {
		if na := str(obj, "status", "notAfter"); na != "" {
			return healthy("valid until " + na)
		}
		return healthy(or(condText(ready), "ready"))
	}
	if c := condition(obj, "Issuing"); c != nil && c["status"] == "True" {
		return progressing("issuing: " + condText(c))
	}
	if c := condition(obj, "Issuing"); c != nil && c["status"] == "False" && c["reason"] == "Failed" {
		return degraded(fmt.Sprintf("issuance failed (%d attempts): %s", num(obj, "status", "failedIssuanceAttempts"), condText(c)))
	}
	if ready != nil && ready["status"] == "False" {
		return degraded(condText(ready))
	}
	return progressing("waiting for cert-manager")
}

// issuerHealth reads cert-manager's Issuer and ClusterIssuer Ready.
func issuerHealth(obj *unstructured.Unstructured) status.HealthDetail {
	c := condition(obj, "Ready")
	switch {
	case c == nil:
		return progressing("waiting for cert-manager")
	case c["status"] == "True":
		return healthy(condText(c))
	case c["status"] == "False":
		return degraded(condText(c))
	}
	return progressing(condText(c))
}

// fluxHealth reads a Flux object's own conditions (kstatus-compliant):
// Stalled is a failure, Reconciling is progress, Ready says the rest.
func fluxHealth(obj *unstructured.Unstructured) status.HealthDetail {
	suspended := ""
	if flag(obj, "spec", "suspend") {
		suspended = "suspended; "
	}
	if c := condition(obj, "Stalled"); c != nil && c["status"] == "True" {
		return degraded(suspended + "stalled: " + condText(c))
	}
	if c := condition(obj, "Reconciling"); c != nil && c["status"] == "True" {
		return progressing(suspended + condText(c))
	}
	c := condition(obj, "Ready")
	switch {
	case c == nil:
		return progressing(suspended + "not reconciled yet")
	case c["status"] == "True":
		return healthy(suspended + condText(c))
	case c["status"] == "False":
		return degraded(suspended + condText(c))
	}
	return progressing(suspended + condText(c))
}

// argoApplicationHealth reads the health Argo CD computed for the
// Application (status.health) and its last operation's phase.
func argoApplicationHealth(obj *unstructured.Unstructured) status.HealthDetail {
	msg := str(obj, "status", "health", "message")
	if p := str(obj, "status", "operationState", "phase"); p == "Failed" || p == "Error" {
		return degraded("sync " + p + ": " + str(obj, "status", "operationState", "message"))
	}
	switch h := str(obj, "status", "health", "status"); h {
	case "Healthy":
		return healthy(or(msg, "Argo CD: Healthy, "+or(str(obj, "status", "sync", "status"), "sync unknown")))
	case "Progressing":
		return progressing(or(msg, "Argo CD: Progressing"))
	case "Suspended":
		return progressing("Argo CD: Suspended " + msg)
	case "Degraded":
		return degraded(or(msg, "Argo CD: Degraded"))
	case "Missing":
		return degraded(or(msg, "Argo CD: its resources are Missing"))
	case "":
		return progressing("Argo CD has not assessed it yet")
	default:
		return status.HealthDetail{Status: status.HealthUnknown, Message: "Argo CD: " + h + " " + msg}
	}
}

// scaledObjectHealth reads KEDA's ScaledObject conditions: Ready False is
// a failure, Fallback True means its scalers fail and the fallback
// replicas run, Paused is healthy by choice, Active says whether it
// scales from zero.
func scaledObjectHealth(obj *unstructured.Unstructured) status.HealthDetail {
	if condIs(obj, "Paused", "True") {
		return healthy("paused")
	}
	if c := condition(obj, "Fallback"); c != nil && c["status"] == "True" {
		return degraded("fallback replicas: " + condText(c))
	}
	c := condition(obj, "Ready")
	switch {
	case c == nil:
		return progressing("waiting for the KEDA operator")
	case c["status"] == "False":
		return degraded(condText(c))
	case c["status"] != "True":
		return progressing(condText(c))
	}
	if condIs(obj, "Active", "True") {
		return healthy("active: " + condText(condition(obj, "Active")))
	}
	return healthy("ready, idle (no scaler active)")
}
