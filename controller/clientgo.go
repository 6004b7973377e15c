package controller

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// client-go reports its REST client and workqueue metrics through
// process-wide adapters that can be set once; they feed these collectors,
// which every Metrics registry then registers.
var (
	restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "client-go requests to an apiserver, by HTTP code, method and host.",
	}, []string{"code", "method", "host"})
	restLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "client-go request latency, by verb and host.",
		Buckets: []float64{.005, .025, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})
	restRateLimiter = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time client-go requests waited for the client-side rate limiter, by verb and host.",
		Buckets: []float64{.005, .025, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})

	queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth", Help: "Current depth of the workqueue (apps waiting for a pass)."}, []string{"name"})
	queueAdds  = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total", Help: "Items added to the workqueue."}, []string{"name"})
	queueWait  = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_queue_duration_seconds", Help: "How long an item waits in the workqueue before a pass takes it.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 10, 9)}, []string{"name"})
	queueWork = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_work_duration_seconds", Help: "How long processing an item (an app's pass) takes.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 10, 9)}, []string{"name"})
	queueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_unfinished_work_seconds", Help: "Seconds of work in progress not yet observed by work_duration; large values mean stuck passes."}, []string{"name"})
	queueLongest    = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_longest_running_processor_seconds", Help: "How long the longest running pass has been running."}, []string{"name"})
	queueRetries    = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_retries_total", Help: "Retries handled by the workqueue."}, []string{"name"})

	clientGoOnce sync.Once
)

// registerClientGoMetrics installs the client-go adapters (once per
// process) and adds their collectors to reg.
func registerClientGoMetrics(reg *prometheus.Registry) {
	clientGoOnce.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency:     latencyAdapter{restLatency},
			RateLimiterLatency: latencyAdapter{restRateLimiter},
			RequestResult:      resultAdapter{},
		})
		workqueue.SetProvider(queueProvider{})
	})
	reg.MustRegister(restRequests, restLatency, restRateLimiter, queueDepth, queueAdds, queueWait, queueWork, queueUnfinished, queueLongest, queueRetries)
}

// latencyAdapter drops the URL's path (object names) and keeps its host.
type latencyAdapter struct{ h *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{}

func (resultAdapter) Increment(_ context.Context, code, method, host string) {
	restRequests.WithLabelValues(code, method, host).Inc()
}

// queueProvider is client-go's workqueue.MetricsProvider over the
// collectors above.
type queueProvider struct{}

func (queueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return queueDepth.WithLabelValues(name)
}
func (queueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return queueAdds.WithLabelValues(name)
}
func (queueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return queueWait.WithLabelValues(name)
}
func (queueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return queueWork.WithLabelValues(name)
}
func (queueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueUnfinished.WithLabelValues(name)
}
func (queueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueLongest.WithLabelValues(name)
}
func (queueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return queueRetries.WithLabelValues(name)
}
