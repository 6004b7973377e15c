package redact

import (
	"encoding/base64"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// minSecretLen is the shortest value Secrets masks: shorter ones ("1",
// "true") would mask unrelated words of a message and are no secret worth
// the noise.
const minSecretLen = 4

// Secrets masks known Secret values in messages. The zero value masks
// nothing; Add and AddObjects teach it values. It is safe for concurrent
// use.
type Secrets struct {
	mu     sync.Mutex
	values map[string]bool
}

// Add records values (each also in base64, the form Secret data takes).
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]bool{}
	}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen {
			continue
		}
		s.values[v] = true
		s.values[base64.StdEncoding.EncodeToString([]byte(v))] = true
		if dec, err := base64.StdEncoding.DecodeString(v); err == nil && len(dec) >= minSecretLen {
			s.values[string(dec)] = true
			// Each line of a decoded file too: a message may quote one.
			for _, line := range strings.Split(string(dec), "\n") {
				if line = strings.TrimSpace(line); len(line) >= minSecretLen {
					s.values[line] = true
				}
			}
		}
	}
}

// AddObjects records the data and stringData values of every Secret in
// objs.
func (s *Secrets) AddObjects(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if o == nil || o.GetKind() != "Secret" {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			m, _, _ := unstructured.NestedMap(o.Object, field)
			for _, v := range m {
				if str, ok := v.(string); ok {
					s.Add(str)
				}
			}
		}
	}
}

// Scrub returns msg with every known value replaced by Mask and every URL
// credential redacted (Text).
func (s *Secrets) Scrub(msg string) string {
	msg = Text(msg)
	if s == nil {
		return msg
	}
	s.mu.Lock()
	vals := make([]string, 0, len(s.values))
	for v := range s.values {
		vals = append(vals, v)
	}
	s.mu.Unlock()
	// Longest first, so that a value containing another is masked whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		if strings.Contains(msg, v) {
			msg = strings.ReplaceAll(msg, v, Mask)
		}
	}
	return msg
}
