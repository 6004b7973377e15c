package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// deliveryChildren names the objects a delivery controller makes from one
// of the app's objects, by those controllers' naming contracts: Flagger
// makes <target>-primary (Deployment, and HPA from the autoscalerRef) and
// <service>-primary and <service>-canary Services from a Canary; Argo
// Rollouts makes <rollout>-<pod-template-hash> ReplicaSets (the current
// and the stable one). Only those whose controller ownerReference points
// at the object are shown (parentOf).
func deliveryChildren(d, lv *unstructured.Unstructured) []status.ObjectRef {
	o := lv
	if o == nil {
		o = d
	}
	ns := d.GetNamespace()
	str := func(path ...string) string {
		s, _, _ := unstructured.NestedString(o.Object, path...)
		return s
	}
	var out []status.ObjectRef
	switch gk := d.GroupVersionKind().GroupKind(); {
	case gk.Group == "flagger.app" && gk.Kind == "Canary":
		target := str("spec", "targetRef", "name")
		if target == "" {
			return nil
		}
		out = append(out, status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: target + "-primary"})
		svc := str("spec", "service", "name")
		if svc == "" {
			svc = target
		}
		for _, suffix := range []string{"-primary", "-canary"} {
			out = append(out, status.ObjectRef{Version: "v1", Kind: "Service", Namespace: ns, Name: svc + suffix})
		}
		if hpa := str("spec", "autoscalerRef", "name"); hpa != "" && str("spec", "autoscalerRef", "kind") == "HorizontalPodAutoscaler" {
			out = append(out, status.ObjectRef{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler", Namespace: ns, Name: hpa + "-primary"})
		}
	case gk.Group == "argoproj.io" && gk.Kind == "Rollout":
		seen := map[string]bool{}
		for _, hash := range []string{str("status", "currentPodHash"), str("status", "stableRS")} {
			if hash != "" && !seen[hash] {
				seen[hash] = true
				out = append(out, status.ObjectRef{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: ns, Name: d.GetName() + "-" + hash})
			}
		}
	}
	return out
}

// generatedByDelivery finds the objects Flagger and Argo Rollouts made
// from the app's Canaries and Rollouts that kdrift does not track, so
// they are shown as Generated children of their producer rather than
// not at all (those carrying the app's labels, copied from the target,
// are found among the tracked objects already). One GET by name each;
// one that cannot be read is not shown.
func (p *pass) generatedByDelivery(ctx context.Context, seen map[string]bool) []status.ResourceStatus {
	var out []status.ResourceStatus
	for _, d := range p.desired {
		parentRef := live.RefOf(d)
		for _, ref := range deliveryChildren(d, p.live[refKey(parentRef)]) {
			key := refKey(ref)
			if seen[key] {
				continue
			}
			lv, err := p.cl.cs.Get(ctx, ref)
			if err != nil || lv == nil {
				continue
			}
			parent, ok := p.parentOf(lv)
			if !ok || parent != parentRef {
				continue
			}
			seen[key] = true
			r := p.judged(ref, status.ResourceGenerated, lv)
			r.Parent = &parent
			out = append(out, r)
		}
	}
	return out
}
