package status

import "time"

// Line is one line of an object rendered as YAML: its text, the field it
// belongs to as a JSON pointer ("" for structural lines such as a list
// dash), and that field's live owners (empty on the Git side, and for
// defaulted fields on the live side).
type Line struct {
	Text   string  `json:"text"`
	Path   string  `json:"path,omitempty"`
	Owners []Owner `json:"owners,omitempty"`
	// Parent marks a line that opens a map or a list ("spec:", "-"): its
	// fields are on the lines below, and having no owner of its own does
	// not make it defaulted.
	Parent bool `json:"parent,omitempty"`
}

// Defaulted reports whether a live line is a field no manager owns, so
// the apiserver's defaults set it. A map or list opener (its fields below
// carry their owners) and the object's type (apiVersion and kind, which
// managedFields never lists) are not defaulted, nor is a structural line.
func (l Line) Defaulted() bool {
	return l.Path != "" && len(l.Owners) == 0 && !l.Parent && l.Path != "/apiVersion" && l.Path != "/kind"
}

// ObjectDetail is one object as Git wants it and as it is live, line by
// line, for the diff and ownership views. Secret values are masked on both
// sides.
type ObjectDetail struct {
	App      string         `json:"app"`
	Resource ResourceStatus `json:"resource"`
	Desired  []Line         `json:"desired"`
	Live     []Line         `json:"live"`
}

// Commit is one commit in an app's history, with kdrift's action read back
// from its trailers when it made it.
type Commit struct {
	Hash    string    `json:"hash"`
	Author  string    `json:"author"`
	Email   string    `json:"email"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
	Body    string    `json:"body,omitempty"`
	// Action is the Kdrift-Action trailer (freeze, unfreeze, revert,
	// ignore); empty for a commit kdrift did not make.
	Action string   `json:"action,omitempty"`
	Apps   []string `json:"apps,omitempty"`
	Reason string   `json:"reason,omitempty"`
}
