package diff

// mergeOver returns live with desired laid over it the way an apply
// would, on the client: maps merge key by key, lists of objects merge by
// element key when one identifies them, everything else is replaced. It
// stands in for a dry-run result when the engine has none.
func mergeOver(live, desired any) any {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return deepCopy(d)
		}
		out := make(map[string]any, len(l)+len(d))
		for k, v := range l {
			out[k] = deepCopy(v)
		}
		for k, v := range d {
			out[k] = mergeOver(l[k], v)
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok || !allMaps(d) || !allMaps(l) || len(l) == 0 {
			return deepCopy(d)
		}
		key := pickKey(d, l)
		if key == nil {
			return deepCopy(d)
		}
		byKey := make(map[string]any, len(l))
		for _, e := range l {
			byKey[keyOf(e.(map[string]any), key)] = e
		}
		out := make([]any, 0, len(d))
		for _, e := range d {
			out = append(out, mergeOver(byKey[keyOf(e.(map[string]any), key)], e))
		}
		return out
	}
	return desired
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
