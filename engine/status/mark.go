package status

import "time"

// Mark is the newest revision kdrift applied to an App, as it is kept
// where a restarted healer reads it: self-heal never applies a revision
// that does not contain it, and a sync needs a person's --allow-older.
type Mark struct {
	// Revision is the commit hash last applied.
	Revision string `json:"revision"`
	// Older is set when a person accepted Revision although it does not
	// contain the mark before it (a sync with --allow-older).
	Older *OlderAccepted `json:"older,omitempty"`
}

// OlderAccepted records a person's decision to apply an older revision.
type OlderAccepted struct {
	// From is the mark the acceptance replaced.
	From string `json:"from"`
	// Reason is what the person gave.
	Reason string `json:"reason"`
	// By is who accepted (Git's user.name <user.email>, or the OS user).
	By string `json:"by,omitempty"`
	// At is when.
	At time.Time `json:"at"`
}
