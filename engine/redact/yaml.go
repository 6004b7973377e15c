package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

var (
	secretKind = regexp.MustCompile(`^kind:\s*["']?Secret["']?\s*(#.*)?$`)
	dataKey    = regexp.MustCompile(`^(data|stringData):\s*(.*)$`)
	childKey   = regexp.MustCompile(`^(\s+)("[^"]*"|'[^']*'|[^\s:#][^:#]*?):(\s*)(.*)$`)
)

// SecretYAML returns a YAML file's text with the values under data and
// stringData of every Secret document replaced by a fingerprint
// (<redacted 1a2b3c4d>), keys and every other line unchanged. Two texts
// masked this way still differ where a value differs, so a diff of them
// shows which keys change without showing the values. Text that holds no
// Secret comes back as is.
func SecretYAML(text string) string {
	if !strings.Contains(text, "Secret") {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	var out strings.Builder
	start := 0
	flush := func(end int) {
		doc := lines[start:end]
		if isSecretDoc(doc) {
			doc = maskDoc(doc)
		}
		for _, l := range doc {
			out.WriteString(l)
		}
		start = end
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "---") {
			flush(i)
		}
	}
	flush(len(lines))
	return out.String()
}

func isSecretDoc(doc []string) bool {
	for _, l := range doc {
		if secretKind.MatchString(strings.TrimRight(l, "\r\n")) {
			return true
		}
	}
	return false
}

// fingerprint names a value without showing it.
func fingerprint(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "<redacted " + hex.EncodeToString(sum[:4]) + ">"
}

// maskDoc masks the top-level data and stringData blocks of one Secret
// document: an inline mapping whole, a block mapping value by value (a
// multi-line value's lines are folded into its fingerprint).
func maskDoc(doc []string) []string {
	out := make([]string, 0, len(doc))
	inData := false
	childIndent := -1
	var cur *string // the masked key line whose block value is being folded
	var folded strings.Builder
	closeValue := func() {
		if cur != nil && folded.Len() > 0 {
			*cur = strings.TrimRight(*cur, "\r\n")
			*cur += " " + fingerprint(folded.String()) + "\n"
		}
		cur = nil
		folded.Reset()
	}
	for _, raw := range doc {
		l := strings.TrimRight(raw, "\r\n")
		trimmed := strings.TrimSpace(l)
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if m := dataKey.FindStringSubmatch(l); m != nil {
			closeValue()
			inData, childIndent = false, -1
			rest := strings.TrimSpace(m[2])
			if rest == "" || strings.HasPrefix(rest, "#") {
				inData = true
				out = append(out, raw)
				continue
			}
			out = append(out, m[1]+": "+fingerprint(rest)+"\n")
			continue
		}
		if !inData {
			out = append(out, raw)
			continue
		}
		if trimmed != "" && indent == 0 {
			closeValue()
			inData = false
			out = append(out, raw)
			continue
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			if cur == nil {
				out = append(out, raw)
			}
			continue
		}
		if childIndent < 0 {
			childIndent = indent
		}
		if indent > childIndent && cur != nil {
			folded.WriteString(trimmed + "\n")
			continue
		}
		closeValue()
		if m := childKey.FindStringSubmatch(l); m != nil && indent == childIndent {
			v := strings.TrimSpace(m[4])
			switch {
			case v == "" || v == "|" || v == ">" || strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
				line := m[1] + m[2] + ":" + "\n"
				out = append(out, line)
				cur = &out[len(out)-1]
			default:
				out = append(out, m[1]+m[2]+": "+fingerprint(v)+"\n")
			}
			continue
		}
		// Anything else inside the block is part of a value: hide it.
		out = append(out, strings.Repeat(" ", indent)+fingerprint(trimmed)+"\n")
	}
	closeValue()
	return out
}
