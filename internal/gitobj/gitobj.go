// Package gitobj reads Git objects with a bound checked against the
// object's header before a byte of it is inflated: a blob, a commit or a
// tag that a hostile commit made huge (a 1 GiB settings file is 4.7 MB in
// .git, a 256 MiB commit message costs nothing to push) is refused with
// a TooLargeError naming both sizes, never read whole first.
//
// go-git inflates an object whole when it is asked for it (a blob's
// Reader, object.GetCommit's message) unless the storage's
// LargeObjectThreshold says otherwise; internal/gitfs sets it, so an
// object past LargeObject stays on disk until read through its Reader,
// and this package never reads past a bound from that Reader.
package gitobj

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Bounds of what kdrift reads from Git, by kind of object.
const (
	// LargeObject is the size past which the object store hands an
	// object out unread (internal/gitfs's LargeObjectThreshold).
	LargeObject = 1 << 20
	// MaxCommitBytes bounds a commit or a tag object (its headers and
	// message): kdrift reads subjects, reasons and trailers from it. Git
	// itself has no bound; 1 MiB is a hundred times a long reason.
	MaxCommitBytes = 1 << 20
	// MaxBlobBytes bounds any file kdrift reads whole: the render
	// budget (64 MiB), past which no render could use it.
	MaxBlobBytes = 64 << 20
	// MaxLinkBytes bounds a symbolic link's target: PATH_MAX on Linux.
	MaxLinkBytes = 4096
	// maxHeaderBytes bounds the header lines (tree, parents, author,
	// committer, a signature) read from a commit past MaxCommitBytes.
	maxHeaderBytes = 64 << 10
)

// TooLargeError says an object is larger than kdrift reads. What names
// it ("commit abc1234", a path) unless the error is wrapped in one that
// does (an fs.PathError).
type TooLargeError struct {
	What string
	Size int64
	Max  int64
}

func (e *TooLargeError) Error() string {
	msg := fmt.Sprintf("is %d bytes, more than the %d kdrift reads", e.Size, e.Max)
	if e.What == "" {
		return msg
	}
	return e.What + " " + msg
}

// ErrTooLarge is what every TooLargeError matches with errors.Is.
var ErrTooLarge = errors.New("object too large")

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Size is object h's size from its header (a loose object's first bytes,
// a pack entry's header), without inflating it.
func Size(s storer.EncodedObjectStorer, h plumbing.Hash) (int64, error) {
	return s.EncodedObjectSize(h)
}

// Blob reads blob h when its header says it is at most max bytes; what
// names it in the error.
func Blob(s storer.EncodedObjectStorer, h plumbing.Hash, max int64, what string) ([]byte, error) {
	size, err := Size(s, h)
	if err != nil {
		return nil, err
	}
	if size > max {
		return nil, &TooLargeError{What: what, Size: size, Max: max}
	}
	o, err := s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	rc, err := o.Reader()
	if err != nil {
		return nil, err
	}
	// The header is trusted no further than the bound: read at most max+1.
	data, err := io.ReadAll(io.LimitReader(rc, max+1))
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err == nil && int64(len(data)) > max {
		return nil, &TooLargeError{What: what, Size: size, Max: max}
	}
	return data, err
}

// Commit reads commit h. One past MaxCommitBytes is read up to the end of
// its header only: the commit comes back with its tree, parents, author
// and committer (so a walk goes on past it) and an empty message, with a
// *TooLargeError.
func Commit(s storer.EncodedObjectStorer, h plumbing.Hash) (*object.Commit, error) {
	size, err := Size(s, h)
	if err != nil {
		return nil, err
	}
	if size <= MaxCommitBytes {
		return object.GetCommit(s, h)
	}
	tooLarge := &TooLargeError{What: "commit " + h.String()[:7], Size: size, Max: MaxCommitBytes}
	o, err := s.EncodedObject(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	if _, inMemory := o.(*plumbing.MemoryObject); inMemory {
		// The store inflated it already (no large-object threshold):
		// refuse it whole rather than decode it.
		return nil, tooLarge
	}
	head, err := header(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tooLarge.What, err)
	}
	mo := &plumbing.MemoryObject{}
	mo.SetType(plumbing.CommitObject)
	if _, err := mo.Write(head); err != nil {
		return nil, err
	}
	c, err := object.DecodeCommit(s, mo)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tooLarge.What, err)
	}
	c.Hash = h
	return c, tooLarge
}

// header is an object's lines up to and with the blank line that ends a
// commit's or a tag's header, at most maxHeaderBytes.
func header(o plumbing.EncodedObject) ([]byte, error) {
	rc, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	r := bufio.NewReader(io.LimitReader(rc, maxHeaderBytes))
	var b bytes.Buffer
	for {
		line, err := r.ReadBytes('\n')
		b.Write(line)
		if err != nil {
			return nil, fmt.Errorf("its header is longer than %d bytes", maxHeaderBytes)
		}
		if len(line) == 1 {
			return b.Bytes(), nil
		}
	}
}

// Tag reads annotated tag h when its header says it is at most
// MaxCommitBytes.
func Tag(s storer.EncodedObjectStorer, h plumbing.Hash) (*object.Tag, error) {
	size, err := Size(s, h)
	if err != nil {
		return nil, err
	}
	if size > MaxCommitBytes {
		return nil, &TooLargeError{What: "tag " + h.String()[:7], Size: size, Max: MaxCommitBytes}
	}
	return object.GetTag(s, h)
}

// ReadFile reads file name of fsys when Stat says it is at most max
// bytes. A repository Snapshot's Stat reads the size from the object's
// header, so an over-bound file is refused before it is inflated; on any
// fs.FS no more than max+1 bytes are read.
func ReadFile(fsys fs.FS, name string, max int64) ([]byte, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: &TooLargeError{Size: info.Size(), Max: max}}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: &TooLargeError{Size: int64(len(data)), Max: max}}
	}
	return data, nil
}
