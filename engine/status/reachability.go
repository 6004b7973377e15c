package status

// EventReachability is the JSON name of the Reachability event.
const EventReachability EventType = "Reachability"

// Target names what the engine reaches: the cluster (of a context) or Git.
type Target string

// Target values.
const (
	TargetCluster Target = "cluster"
	TargetGit     Target = "git"
)

// Reachability says the cluster or Git became unreachable (Up false, with
// the error) or reachable again (Up true). The engine sends it on each
// change, not on every failed attempt; When is the moment of the change.
type Reachability struct {
	Base
	Target Target `json:"target"`
	// Context is the kubeconfig context for TargetCluster.
	Context string `json:"context,omitempty"`
	Up      bool   `json:"up"`
	Message string `json:"message,omitempty"`
}

// Type is EventReachability.
func (Reachability) Type() EventType { return EventReachability }
