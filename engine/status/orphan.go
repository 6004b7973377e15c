package status

// Orphan is a live object in an app's namespace, of a kind kdrift watches,
// that no App renders, no controller owns and no controller created: a
// ConfigMap made by hand during an incident.
type Orphan struct {
	Ref ObjectRef `json:"ref"`
	// Apps are the apps whose destination namespace holds the object.
	Apps []string `json:"apps"`
	// Creator is the manager that created the object, from its oldest
	// managedFields entry; Manager is empty when none is recorded.
	Creator Owner `json:"creator"`
}
