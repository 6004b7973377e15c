package source

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// TestRemoteErrorOfAFullDisk: a fetch that failed writing the clone (a
// full disk, a file-size limit) says so and how to fix it, not to check
// the network.
func TestRemoteErrorOfAFullDisk(t *testing.T) {
	for _, cause := range []error{
		&fs.PathError{Op: "write", Path: "/cache/objects/pack/tmp_pack_1", Err: syscall.EFBIG},
		&fs.PathError{Op: "write", Path: "/cache/objects/pack/tmp_pack_1", Err: syscall.ENOSPC},
		errors.New("write /cache/objects/pack/tmp_pack_1: no space left on device"),
	} {
		msg := (&RemoteError{Remote: "https://git.example/team/gitops", Op: "fetch", Err: cause}).Error()
		if !LocalWriteFailure(cause) || strings.Contains(msg, "check the URL") || !strings.Contains(msg, "free space or raise the limit") {
			t.Errorf("%v: %s", cause, msg)
		}
	}
	net := (&RemoteError{Remote: "https://git.example/team/gitops", Op: "fetch", Err: errors.New("dial tcp: connection refused")}).Error()
	if LocalWriteFailure(errors.New("dial tcp: connection refused")) || !strings.Contains(net, "check the URL") {
		t.Errorf("a network failure: %s", net)
	}
}
