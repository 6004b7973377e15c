package actions

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Trailer keys kdrift writes at the end of every commit message.
const (
	TrailerAction   = "Kdrift-Action"
	TrailerApp      = "Kdrift-App"
	TrailerRevertOf = "Kdrift-Revert-Of"
	TrailerUntil    = "Kdrift-Until"
)

// maxSubject is the subject length kdrift aims to stay under.
const maxSubject = 72

type trailer struct{ Key, Value string }

// message is a commit message: subject, free-text body and trailers.
type message struct {
	Subject  string
	Body     string
	Trailers []trailer
}

func (m message) String() string {
	var sb strings.Builder
	sb.WriteString(m.Subject)
	sb.WriteString("\n")
	if b := strings.TrimSpace(m.Body); b != "" {
		sb.WriteString("\n")
		sb.WriteString(b)
		sb.WriteString("\n")
	}
	if len(m.Trailers) > 0 {
		sb.WriteString("\n")
		for _, t := range m.Trailers {
			fmt.Fprintf(&sb, "%s: %s\n", t.Key, t.Value)
		}
	}
	return sb.String()
}

// cleanReason trims a reason and refuses a blank one or one that is not
// text.
func cleanReason(reason string) (string, error) {
	r := strings.TrimSpace(strings.ReplaceAll(reason, "\r\n", "\n"))
	if r == "" {
		return "", fmt.Errorf("a reason is required: pass --reason \"what happened and why\" (it is recorded in the commit)")
	}
	if !utf8.ValidString(r) {
		return "", fmt.Errorf("the reason is not valid UTF-8 text")
	}
	return r, nil
}

// subjectFor builds `action(app1,app2): first line of reason`, shortening
// the app list to "N apps" and then the reason line to stay under
// maxSubject characters.
func subjectFor(action string, apps []string, reason string) string {
	first := strings.TrimSpace(strings.SplitN(reason, "\n", 2)[0])
	scope := strings.Join(apps, ",")
	if len(apps) > 1 && utf8.RuneCountInString(action)+utf8.RuneCountInString(scope)+4+utf8.RuneCountInString(first) > maxSubject {
		scope = fmt.Sprintf("%d apps", len(apps))
	}
	prefix := fmt.Sprintf("%s(%s): ", action, scope)
	return prefix + truncate(first, maxSubject-utf8.RuneCountInString(prefix))
}

// truncate cuts s to at most n runes, ending in "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

func actionTrailers(action string, apps []string) []trailer {
	ts := []trailer{{TrailerAction, action}}
	for _, a := range apps {
		ts = append(ts, trailer{TrailerApp, a})
	}
	return ts
}

var trailerLine = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9-]*): (.*)$`)

// parseMessage splits a commit message into subject, body and the trailers
// of its last paragraph (when every line of it is a trailer).
func parseMessage(msg string) message {
	msg = strings.ReplaceAll(msg, "\r\n", "\n")
	parts := strings.SplitN(msg, "\n", 2)
	m := message{Subject: strings.TrimSpace(parts[0])}
	if len(parts) == 1 {
		return m
	}
	rest := strings.Trim(parts[1], "\n")
	paras := strings.Split(rest, "\n\n")
	last := strings.Split(strings.TrimSpace(paras[len(paras)-1]), "\n")
	var ts []trailer
	for _, l := range last {
		sm := trailerLine.FindStringSubmatch(strings.TrimSpace(l))
		if sm == nil {
			ts = nil
			break
		}
		ts = append(ts, trailer{sm[1], strings.TrimSpace(sm[2])})
	}
	if len(ts) > 0 {
		m.Trailers = ts
		paras = paras[:len(paras)-1]
	}
	m.Body = strings.TrimSpace(strings.Join(paras, "\n\n"))
	return m
}

func (m message) trailer(key string) string {
	for _, t := range m.Trailers {
		if strings.EqualFold(t.Key, key) {
			return t.Value
		}
	}
	return ""
}

func (m message) trailerValues(key string) []string {
	var out []string
	for _, t := range m.Trailers {
		if strings.EqualFold(t.Key, key) {
			out = append(out, t.Value)
		}
	}
	return out
}

var revertLine = regexp.MustCompile(`^This reverts commit [0-9a-f]{40}\.\s*`)

// reason is the person's reason recorded in a kdrift commit's body.
func (m message) reason() string {
	return strings.TrimSpace(revertLine.ReplaceAllString(m.Body, ""))
}
