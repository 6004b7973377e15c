package source_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"kdrift.dev/kdrift/engine/source"
)

// sshServer serves `git-upload-pack` over SSH to one client key, running the
// real git command for each session. It returns the server's address and
// a known_hosts file naming its host key.
func sshServer(t *testing.T, clientKey ssh.PublicKey) (addr, knownHosts string) {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(clientKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveSSH(conn, cfg)
			}()
		}
	}()
	addr = ln.Addr().String()
	knownHosts = filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, hostSigner.PublicKey())
	if err := os.WriteFile(knownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return addr, knownHosts
}

func serveSSH(conn net.Conn, cfg *ssh.ServerConfig) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range chReqs {
				if req.Type != "exec" {
					req.Reply(false, nil)
					continue
				}
				var payload struct{ Command string }
				if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
					req.Reply(false, nil)
					return
				}
				req.Reply(true, nil)
				// "git-upload-pack '/path'" -> git upload-pack /path
				service, repo, _ := strings.Cut(payload.Command, " ")
				cmd := exec.Command("git", strings.TrimPrefix(service, "git-"), strings.Trim(repo, "'"))
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				status := uint32(0)
				if err := cmd.Run(); err != nil {
					status = 1
				}
				ch.CloseWrite()
				ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
				return
			}
		}()
	}
}

func TestCloneSSHWithKeyFile(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "kdrift test")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	addr, knownHosts := sshServer(t, sshPub)
	t.Setenv("SSH_KNOWN_HOSTS", knownHosts)
	t.Setenv(source.EnvSSHKey, keyFile)
	url := fmt.Sprintf("ssh://git@%s%s", addr, bare.Dir)

	r, err := source.Open(ctx, source.Options{Location: url, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := r.Head(ctx)
	if err != nil || rev.Hash != work.Git("rev-parse", "HEAD") {
		t.Fatalf("Head over ssh = %+v, %v", rev, err)
	}

	// Another key is refused, and the error names the remote.
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err = ssh.MarshalPrivateKey(other, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = source.Open(ctx, source.Options{Location: url, CacheDir: t.TempDir()})
	var re *source.RemoteError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "git remote "+url+": clone failed") {
		t.Fatalf("wrong key: %v", err)
	}
}
