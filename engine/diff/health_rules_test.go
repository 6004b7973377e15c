package diff

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// healthCase is one object, shaped as its controller writes its status,
// and the judgement kdrift must reach.
type healthCase struct {
	name, doc string
	want      status.Health
	rule      string
	// msg must appear in the message.
	msg string
}

func runHealthCases(t *testing.T, cases []healthCase, checks *HealthChecks) {
	t.Helper()
	for _, tc := range cases {
		d := Judge(obj(t, tc.doc), checks)
		if d.Status != tc.want || (tc.rule != "" && d.Rule != tc.rule) || !strings.Contains(d.Message, tc.msg) {
			t.Errorf("%s: Judge = %s by %q (%q), want %s by %q with %q", tc.name, d.Status, d.Rule, d.Message, tc.want, tc.rule, tc.msg)
		}
	}
}

const rolloutSpec = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: prod, generation: 4}
spec:
  replicas: 5
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      steps:
      - setWeight: 20
      - pause: {}
      - setWeight: 40
      - pause: {duration: 10m}
      - analysis: {templates: [{templateName: success-rate}]}
      - setWeight: 80
      - pause: {duration: 10m}
      - setWeight: 100
`

func TestHealthRolloutRule(t *testing.T) {
	t.Parallel()
	runHealthCases(t, []healthCase{
		{"healthy", rolloutSpec + `status: {phase: Healthy, observedGeneration: "4", currentStepIndex: 8, replicas: 5, updatedReplicas: 5, readyReplicas: 5, availableReplicas: 5, stableRS: 6d4f5c, currentPodHash: 6d4f5c, conditions: [{type: Available, status: "True", reason: AvailableReason, message: Rollout has minimum availability}, {type: Healthy, status: "True", reason: RolloutHealthy, message: Rollout is healthy}]}`,
			status.HealthHealthy, "Rollout", "stable, 5/5 replicas available"},
		{"paused at a pause step", rolloutSpec + `status: {phase: Paused, message: CanaryPauseStep, observedGeneration: "4", currentStepIndex: 1, controllerPause: true, pauseConditions: [{reason: CanaryPauseStep, startTime: "2026-12-05T10:00:00Z"}], replicas: 6, updatedReplicas: 1, availableReplicas: 6, canary: {}}`,
			status.HealthProgressing, "Rollout", "paused at step 1/8, weight 20%, waiting: CanaryPauseStep"},
		{"progressing with traffic weights and analysis", rolloutSpec + `status: {phase: Progressing, message: more replicas need to be updated, observedGeneration: "4", currentStepIndex: 4, canary: {weights: {canary: {weight: 40, podTemplateHash: 7c9f}, stable: {weight: 60, podTemplateHash: 6d4f}}, currentStepAnalysisRunStatus: {name: web-7c9f-4, status: Running}}}`,
			status.HealthProgressing, "Rollout", "step 4/8, weight 40%, analysis web-7c9f-4 Running"},
		{"aborted", rolloutSpec + `status: {abort: true, phase: Degraded, message: 'RolloutAborted: Rollout aborted update to revision 3: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)', observedGeneration: "4", currentStepIndex: 0, abortedAt: "2026-12-05T10:05:00Z", conditions: [{type: Progressing, status: "False", reason: RolloutAborted, message: Rollout aborted update to revision 3}]}`,
			status.HealthDegraded, "Rollout", `aborted: RolloutAborted: Rollout aborted update to revision 3: Metric "success-rate"`},
		{"abort not acted on yet", rolloutSpec + `status: {abort: true, phase: Paused, message: CanaryPauseStep, observedGeneration: "4", currentStepIndex: 1, pauseConditions: [{reason: CanaryPauseStep, startTime: "2026-12-05T10:00:00Z"}]}`,
			status.HealthDegraded, "Rollout", "aborted: the Argo Rollouts controller is scaling the canary down"},
		{"degraded phase", rolloutSpec + `status: {phase: Degraded, message: 'ProgressDeadlineExceeded: ReplicaSet "web-7c9f" has timed out progressing.', observedGeneration: "4"}`,
			status.HealthDegraded, "Rollout", "ProgressDeadlineExceeded"},
		{"generation not observed (string)", rolloutSpec + `status: {phase: Healthy, observedGeneration: "3"}`,
			status.HealthProgressing, RuleKstatus, "generation 4 not observed"},
		{"no status yet", rolloutSpec, status.HealthProgressing, "Rollout", "waiting for the Argo Rollouts controller"},
	}, nil)
}

const flaggerSpec = `apiVersion: flagger.app/v1beta1
kind: Canary
metadata: {name: podinfo, namespace: test, generation: 1}
spec:
  provider: kubernetes
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  service: {port: 9898}
  analysis: {interval: 1m, threshold: 5, maxWeight: 50, stepWeight: 10, iterations: 0}
`

func TestHealthFlaggerCanaryRule(t *testing.T) {
	t.Parallel()
	runHealthCases(t, []healthCase{
		{"initialized", flaggerSpec + `status: {phase: Initialized, failedChecks: 0, canaryWeight: 0, iterations: 0, lastAppliedSpec: 5d7f9c, conditions: [{type: Promoted, status: "True", reason: Initialized, message: Deployment initialization completed.}]}`,
			status.HealthHealthy, "Canary", "Initialized: Deployment initialization completed."},
		{"succeeded", flaggerSpec + `status: {phase: Succeeded, failedChecks: 0, canaryWeight: 0, iterations: 0, conditions: [{type: Promoted, status: "True", reason: Succeeded, message: 'Canary analysis completed successfully, promotion finished.'}]}`,
			status.HealthHealthy, "Canary", "promotion finished"},
		{"progressing", flaggerSpec + `status: {phase: Progressing, failedChecks: 1, canaryWeight: 20, iterations: 0, conditions: [{type: Promoted, status: Unknown, reason: Progressing, message: 'New revision detected, progressing canary analysis.'}]}`,
			status.HealthProgressing, "Canary", "Progressing: step 2/5, weight 20%, 1 failed checks of 5"},
		{"failed", flaggerSpec + `status: {phase: Failed, failedChecks: 5, canaryWeight: 0, iterations: 0, conditions: [{type: Promoted, status: "False", reason: Failed, message: 'Canary analysis failed, Deployment scaled to zero.'}]}`,
			status.HealthDegraded, "Canary", "canary failed after 5 failed checks: Failed: Canary analysis failed, Deployment scaled to zero."},
		{"failed, as flagger leaves it", flaggerSpec + `status: {phase: Failed, failedChecks: 0, canaryWeight: 0, iterations: 0, conditions: [{type: Promoted, status: "False", reason: Failed, message: 'Canary analysis failed, Deployment scaled to zero.'}]}`,
			status.HealthDegraded, "Canary", "canary failed: Failed: Canary analysis failed, Deployment scaled to zero."},
		{"not seen by flagger", flaggerSpec, status.HealthProgressing, "Canary", "waiting for Flagger"},
	}, nil)
}

func TestHealthCertManagerRules(t *testing.T) {
	t.Parallel()
	const cert = "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web-tls, namespace: prod, generation: 2}\nspec: {secretName: web-tls, dnsNames: [web.example.com], issuerRef: {name: letsencrypt, kind: ClusterIssuer}}\n"
	const issuer = "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: letsencrypt, generation: 1}\nspec: {acme: {server: 'https://acme-v02.api.letsencrypt.org/directory'}}\n"
	runHealthCases(t, []healthCase{
		{"certificate ready", cert + `status: {notAfter: "2027-03-01T00:00:00Z", notBefore: "2026-12-01T00:00:00Z", renewalTime: "2027-01-30T00:00:00Z", revision: 2, conditions: [{type: Ready, status: "True", reason: Ready, message: Certificate is up to date and has not expired, observedGeneration: 2}]}`,
			status.HealthHealthy, "Certificate", "valid until 2027-03-01T00:00:00Z"},
		{"certificate issuing", cert + `status: {conditions: [{type: Ready, status: "False", reason: DoesNotExist, message: Issuing certificate as Secret does not exist, observedGeneration: 2}, {type: Issuing, status: "True", reason: DoesNotExist, message: Issuing certificate as Secret does not exist, observedGeneration: 2}]}`,
			status.HealthProgressing, "Certificate", "issuing: DoesNotExist"},
		{"certificate failed", cert + `status: {failedIssuanceAttempts: 3, lastFailureTime: "2026-12-05T10:00:00Z", conditions: [{type: Ready, status: "False", reason: DoesNotExist, message: Issuing certificate as Secret does not exist, observedGeneration: 2}, {type: Issuing, status: "False", reason: Failed, message: 'The certificate request has failed to complete and will be retried: Failed to wait for order resource "web-tls-1-123" to become ready', observedGeneration: 2}]}`,
			status.HealthDegraded, "Certificate", "issuance failed (3 attempts): Failed: The certificate request has failed"},
		{"issuer ready", issuer + `status: {acme: {uri: 'https://acme-v02.api.letsencrypt.org/acme/acct/1'}, conditions: [{type: Ready, status: "True", reason: ACMEAccountRegistered, message: The ACME account was registered with the ACME server, observedGeneration: 1}]}`,
			status.HealthHealthy, "ClusterIssuer", "ACMEAccountRegistered"},
		{"issuer failed", issuer + `status: {conditions: [{type: Ready, status: "False", reason: ErrRegisterACMEAccount, message: 'Failed to register ACME account: 400 urn:ietf:params:acme:error:invalidEmail', observedGeneration: 1}]}`,
			status.HealthDegraded, "ClusterIssuer", "ErrRegisterACMEAccount"},
		{"issuer new", issuer, status.HealthProgressing, "ClusterIssuer", "waiting for cert-manager"},
	}, nil)
}

func TestHealthCoreRules(t *testing.T) {
	t.Parallel()
	const ing = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: prod, generation: 1}\nspec: {ingressClassName: nginx, rules: [{host: web.example.com}]}\n"
	const hpa = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: prod}\nspec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 2, maxReplicas: 10}\n"
	const pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: prod, generation: 1}\nspec: {minAvailable: 2, selector: {matchLabels: {app: web}}}\n"
	const apisvc = "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.metrics.k8s.io}\nspec: {group: metrics.k8s.io, version: v1beta1, service: {name: metrics-server, namespace: kube-system}}\n"
	const pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: prod}\nspec: {volumeName: pv-1}\n"
	runHealthCases(t, []healthCase{
		{"ingress with address", ing + `status: {loadBalancer: {ingress: [{ip: 10.0.0.7}]}}`, status.HealthHealthy, "Ingress", "address 10.0.0.7"},
		{"ingress without address", ing + `status: {loadBalancer: {}}`, status.HealthProgressing, "Ingress", "no address yet"},
		{"hpa scaling", hpa + `status: {currentReplicas: 3, desiredReplicas: 3, conditions: [{type: AbleToScale, status: "True", reason: ReadyForNewScale, message: recommended size matches current size}, {type: ScalingActive, status: "True", reason: ValidMetricFound, message: the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)}, {type: ScalingLimited, status: "False", reason: DesiredWithinRange, message: the desired count is within the acceptable range}]}`,
			status.HealthHealthy, "HorizontalPodAutoscaler", "3 replicas, wants 3 (min 2, max 10)"},
		{"hpa without metrics", hpa + `status: {currentReplicas: 2, desiredReplicas: 0, conditions: [{type: AbleToScale, status: "True", reason: SucceededGetScale, message: the HPA controller was able to get the target's current scale}, {type: ScalingActive, status: "False", reason: FailedGetResourceMetric, message: 'the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API'}]}`,
			status.HealthDegraded, "HorizontalPodAutoscaler", "scaling inactive: FailedGetResourceMetric"},
		{"hpa cannot get scale", hpa + `status: {conditions: [{type: AbleToScale, status: "False", reason: FailedGetScale, message: 'the HPA controller was unable to get the target''s current scale: deployments/scale.apps "web" not found'}]}`,
			status.HealthDegraded, "HorizontalPodAutoscaler", "cannot scale: FailedGetScale"},
		{"hpa new", hpa, status.HealthProgressing, "HorizontalPodAutoscaler", "waiting for the HPA controller"},
		{"pdb allows", pdb + `status: {observedGeneration: 1, disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, conditions: [{type: DisruptionAllowed, status: "True", reason: SufficientPods}]}`,
			status.HealthHealthy, "PodDisruptionBudget", "1 disruptions allowed (3/2 healthy)"},
		{"pdb insufficient", pdb + `status: {observedGeneration: 1, disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 2, expectedPods: 3, conditions: [{type: DisruptionAllowed, status: "False", reason: InsufficientPods}]}`,
			status.HealthDegraded, "PodDisruptionBudget", "1 healthy pods, budget wants 2"},
		{"pdb not computed", pdb, status.HealthProgressing, "PodDisruptionBudget", "waiting for the disruption controller"},
		{"apiservice available", apisvc + `status: {conditions: [{type: Available, status: "True", reason: Passed, message: all checks passed}]}`, status.HealthHealthy, "APIService", "Passed"},
		{"apiservice unavailable", apisvc + `status: {conditions: [{type: Available, status: "False", reason: MissingEndpoints, message: endpoints for service/metrics-server in "kube-system" have no addresses with port name "https"}]}`,
			status.HealthDegraded, "APIService", "unavailable: MissingEndpoints"},
		{"apiservice new", apisvc, status.HealthProgressing, "APIService", "waiting for the aggregator"},
		{"pvc bound", pvc + `status: {phase: Bound, capacity: {storage: 10Gi}}`, status.HealthHealthy, "PersistentVolumeClaim", "bound to pv-1 10Gi"},
		{"pvc pending", pvc + `status: {phase: Pending}`, status.HealthProgressing, "PersistentVolumeClaim", "Pending"},
		{"pvc lost", pvc + `status: {phase: Lost}`, status.HealthDegraded, "PersistentVolumeClaim", "lost"},
	}, nil)
}

func TestHealthGitOpsAndKEDARules(t *testing.T) {
	t.Parallel()
	const ks = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system, generation: 3}\nspec: {path: ./apps, sourceRef: {kind: GitRepository, name: flux-system}}\n"
	const hr = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: redis, namespace: prod, generation: 1}\nspec: {chart: {spec: {chart: redis}}}\n"
	const gitrepo = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system, generation: 1}\nspec: {url: 'https://example.com/repo'}\n"
	const argo = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: guestbook, namespace: argocd, generation: 5}\nspec: {project: default}\n"
	const so = "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: worker, namespace: prod, generation: 1}\nspec: {scaleTargetRef: {name: worker}}\n"
	runHealthCases(t, []healthCase{
		{"kustomization ready", ks + `status: {observedGeneration: 3, lastAppliedRevision: main@sha1:abc, conditions: [{type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:abc"}]}`,
			status.HealthHealthy, "Kustomization", "ReconciliationSucceeded"},
		{"kustomization reconciling", ks + `status: {observedGeneration: 3, conditions: [{type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision main@sha1:def"}, {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress}]}`,
			status.HealthProgressing, "Kustomization", "Running health checks"},
		{"kustomization failed", ks + `status: {observedGeneration: 3, conditions: [{type: Ready, status: "False", reason: BuildFailed, message: "kustomize build failed: accumulating resources"}]}`,
			status.HealthDegraded, "Kustomization", "BuildFailed"},
		{"helmrelease stalled", hr + `status: {observedGeneration: 1, conditions: [{type: Stalled, status: "True", reason: RetriesExceeded, message: Failed to install after 1 attempt(s)}, {type: Ready, status: "False", reason: InstallFailed, message: "Helm install failed for release prod/redis"}]}`,
			status.HealthDegraded, "HelmRelease", "stalled: RetriesExceeded"},
		{"gitrepository ready", gitrepo + `status: {observedGeneration: 1, artifact: {revision: main@sha1:abc}, conditions: [{type: Ready, status: "True", reason: Succeeded, message: "stored artifact for revision 'main@sha1:abc'"}]}`,
			status.HealthHealthy, "GitRepository", "stored artifact"},
		{"gitrepository new", gitrepo, status.HealthProgressing, "GitRepository", "not reconciled yet"},
		{"application healthy", argo + `status: {sync: {status: Synced, revision: abc}, health: {status: Healthy}, operationState: {phase: Succeeded, message: successfully synced (all tasks run)}}`,
			status.HealthHealthy, "Application", "Argo CD: Healthy, Synced"},
		{"application progressing", argo + `status: {sync: {status: OutOfSync}, health: {status: Progressing, message: "Waiting for rollout to finish"}}`,
			status.HealthProgressing, "Application", "Waiting for rollout"},
		{"application degraded", argo + `status: {sync: {status: Synced}, health: {status: Degraded, message: 'Deployment "guestbook-ui" exceeded its progress deadline'}}`,
			status.HealthDegraded, "Application", "exceeded its progress deadline"},
		{"application sync failed", argo + `status: {sync: {status: OutOfSync}, health: {status: Healthy}, operationState: {phase: Failed, message: one or more objects failed to apply}}`,
			status.HealthDegraded, "Application", "sync Failed: one or more objects failed to apply"},
		{"scaledobject active", so + `status: {scaleTargetKind: apps/v1.Deployment, originalReplicaCount: 1, conditions: [{type: Ready, status: "True", reason: ScaledObjectReady, message: ScaledObject is defined correctly and is ready for scaling}, {type: Active, status: "True", reason: ScalerActive, message: Scaling is performed because triggers are active}, {type: Fallback, status: "False", reason: NoFallbackFound, message: No fallbacks are active on this scaled object}]}`,
			status.HealthHealthy, "ScaledObject", "active: ScalerActive"},
		{"scaledobject idle", so + `status: {conditions: [{type: Ready, status: "True", reason: ScaledObjectReady}, {type: Active, status: "False", reason: ScalerNotActive, message: Scaling is not performed because triggers are not active}]}`,
			status.HealthHealthy, "ScaledObject", "idle"},
		{"scaledobject failing", so + `status: {conditions: [{type: Ready, status: "False", reason: ScaledObjectCheckFailed, message: ScaledObject doesn't have correct scaleTargetRef specification}]}`,
			status.HealthDegraded, "ScaledObject", "ScaledObjectCheckFailed"},
		{"scaledobject new", so, status.HealthProgressing, "ScaledObject", "waiting for the KEDA operator"},
	}, nil)
}

func TestHealthFloor(t *testing.T) {
	t.Parallel()
	runHealthCases(t, []healthCase{
		{"bare custom resource", `{apiVersion: monitoring.coreos.com/v1, kind: ServiceMonitor, metadata: {name: web}, spec: {endpoints: [{port: http}]}}`,
			status.HealthUnknown, RuleNone, "no health rule for ServiceMonitor.monitoring.coreos.com"},
		{"custom resource with a phase only", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 1}, status: {phase: Running}}`,
			status.HealthUnknown, RuleNone, "add a CEL check"},
		{"custom resource stalled", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {conditions: [{type: Stalled, status: "True", reason: Broken, message: cannot reach the backend}]}}`,
			status.HealthDegraded, RuleKstatus, "cannot reach the backend"},
		{"configmap", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`, status.HealthHealthy, RuleKstatus, ""},
		{"service account", `{apiVersion: v1, kind: ServiceAccount, metadata: {name: s}}`, status.HealthHealthy, RuleKstatus, "no status to judge"},
	}, nil)
	if d := Judge(nil, nil); d.Status != status.HealthMissing {
		t.Errorf("nil: %+v", d)
	}
}

func TestHealthCEL(t *testing.T) {
	t.Parallel()
	checks := NewHealthChecks([]app.HealthCheck{{
		APIVersion: "example.com/v1", Kind: "Widget",
		Current:    "status.phase == 'Running'",
		InProgress: "status.phase == 'Starting'",
		Failed:     "status.phase == 'Crashed' || status.conditions.exists(c, c.type == 'Broken' && c.status == 'True')",
	}, {
		// Overrides kdrift's own rule for the kind.
		APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Current: "has(metadata.annotations) && 'internal' in metadata.annotations",
	}})
	const w = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, generation: 2}\n"
	runHealthCases(t, []healthCase{
		{"current", w + "status: {observedGeneration: 2, phase: Running}", status.HealthHealthy, RuleCEL, "current: status.phase == 'Running'"},
		{"in progress", w + "status: {observedGeneration: 2, phase: Starting}", status.HealthProgressing, RuleCEL, "inProgress"},
		{"failed", w + "status: {observedGeneration: 2, phase: Crashed}", status.HealthDegraded, RuleCEL, "failed"},
		{"no status: an evaluation error is no verdict", w, status.HealthProgressing, RuleCEL, "no expression held"},
		{"generation first", w + "status: {observedGeneration: 1, phase: Running}", status.HealthProgressing, RuleKstatus, "not observed"},
		{"over a kind rule", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, annotations: {internal: 'yes'}}\n", status.HealthHealthy, RuleCEL, "current"},
		{"other kinds untouched", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n", status.HealthUnknown, RuleNone, ""},
	}, checks)
}
