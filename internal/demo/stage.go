package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The managers the staged incident writes as, as real tools name themselves.
const (
	// KubectlScale is `kubectl scale`'s field manager (it writes through the
	// scale subresource).
	KubectlScale = "kubectl"
	// KubectlEdit is `kubectl edit`'s field manager.
	KubectlEdit = "kubectl-edit"
	// HPA is the HorizontalPodAutoscaler controller's field manager.
	HPA = "horizontal-pod-autoscaler"
	// HandoverManager is the manager kdrift hands a field to when it stops
	// applying it (apply.HandoverManager).
	HandoverManager = "kdrift-handover"
)

// Staged replica counts and the hand-added key.
const (
	StagingReplicas = 12
	ProdHPAReplicas = 10
	HandAddedKey    = "debug-sessions"
)

// StageStaging is the earlier on-call's life-saving fix: the render
// worker scaled from Git's 6 to 12 with `kubectl scale`.
func StageStaging(ctx context.Context, cs kubernetes.Interface) error {
	ns := Namespace("staging")
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "render-worker", Namespace: ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: StagingReplicas},
	}
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "render-worker", scale, metav1.UpdateOptions{FieldManager: KubectlScale}); err != nil {
		return fmt.Errorf("Deployment/%s/render-worker: scale to %d: %w", ns, StagingReplicas, err)
	}
	return nil
}

// StageProd gives prod's render worker an HPA that owns its replica count
// (the App ignores /spec/replicas), and adds a ConfigMap key by hand the
// way `kubectl edit` does: self-heal removes it as the demo starts.
func StageProd(ctx context.Context, cs kubernetes.Interface) error {
	ns := Namespace("prod")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "render-worker", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "render-worker"},
			MinReplicas:    ptr.To[int32](4),
			MaxReplicas:    16,
		},
	}
	_, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("HorizontalPodAutoscaler/%s/render-worker: create: %w", ns, err)
	}
	// kdrift handed the field over when prod began to ignore it (design
	// fact 4): the live value, applied under kdrift's hand-over manager.
	// Without an owner, the HPA's write through the scale subresource
	// would record none either (fact 6) and the field would read as
	// defaulted rather than the autoscaler's.
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "render-worker", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("Deployment/%s/render-worker: %w", ns, err)
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	handover, _ := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "render-worker", "namespace": ns},
		"spec":     map[string]any{"replicas": replicas},
	})
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "render-worker", types.ApplyPatchType, handover, metav1.PatchOptions{FieldManager: HandoverManager, Force: ptr.To(true)}); err != nil {
		return fmt.Errorf("Deployment/%s/render-worker: hand over replicas: %w", ns, err)
	}
	// The local control plane runs no metrics pipeline, so the HPA's write
	// is made here, as the HPA controller makes it: through the scale
	// subresource, under its own manager name.
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "render-worker", Namespace: ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: ProdHPAReplicas},
	}
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "render-worker", scale, metav1.UpdateOptions{FieldManager: HPA}); err != nil {
		return fmt.Errorf("Deployment/%s/render-worker: HPA scale to %d: %w", ns, ProdHPAReplicas, err)
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{HandAddedKey: "true"}})
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "session-cache-config", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: KubectlEdit}); err != nil {
		return fmt.Errorf("ConfigMap/%s/session-cache-config: add %s by hand: %w", ns, HandAddedKey, err)
	}
	return nil
}

// RunCloudController plays a cloud controller in dev that keeps rewriting
// the load-balancer pool annotation Git sets on the TTS Service, every
// interval, until ctx ends. kdrift heals it back each time, until it sees
// the fight and stops. Errors are reported on errs without blocking.
func RunCloudController(ctx context.Context, cs kubernetes.Interface, interval time.Duration, errs chan<- error) {
	ns := Namespace("dev")
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{FightAnnotation: "lb-pool-7f3a"}}})
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, err := cs.CoreV1().Services(ns).Patch(ctx, "tts-gateway", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: CloudController})
		if err != nil && ctx.Err() == nil {
			select {
			case errs <- fmt.Errorf("Service/%s/tts-gateway: cloud-controller write: %w", ns, err):
			default:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
