package main

import (
	"fmt"
	"io"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// embeddedEtcd is a single-member etcd living in this process.
type embeddedEtcd struct {
	e *embed.Etcd
}

// startEtcd starts etcd on loopback ports the kernel picks. Its data is
// throwaway, so fsync is off: that is most of what makes a test apiserver fast.
func startEtcd(dir string, logOut io.Writer) (*embeddedEtcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "localcluster"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	any0 := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{any0}
	cfg.AdvertiseClientUrls = []url.URL{any0}
	cfg.ListenPeerUrls = []url.URL{any0}
	cfg.AdvertisePeerUrls = []url.URL{any0}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(logOut),
		zapcore.WarnLevel,
	)))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd not ready within 60s")
	}
	return &embeddedEtcd{e: e}, nil
}

// ClientURL is the address the apiserver reaches etcd on.
func (e *embeddedEtcd) ClientURL() string {
	return "http://" + e.e.Clients[0].Addr().String()
}

// Close stops etcd and waits for it.
func (e *embeddedEtcd) Close() { e.e.Close() }
