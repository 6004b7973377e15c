package render

import "runtime"

// What a document costs the process that decodes it is its nodes: a YAML
// or JSON node is a few bytes of text and, once parsed, a yaml.v3 Node
// (about 160 bytes) or a map entry or slice element of an object (about
// 50 bytes) that the render keeps. A 4 MiB file of "a," is two million
// nodes: hundreds of MB in the parent. So before any parser builds a node,
// a file's nodes are counted from its bytes (yamlNodes, jsonNodes: no
// allocation but the flow stack), and what every file and every output of
// one render decodes adds up against Options.MaxRenderNodes.

// isSpace reports whether c separates YAML tokens on a line.
func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// isBreak reports whether c ends a YAML line (a CR alone does too).
func isBreak(c byte) bool { return c == '\n' || c == '\r' }

// endsIndicator reports whether the byte at i (or the end of data) ends an
// indicator such as "- ", ": " or "? ": a space or a line end, or in a
// flow collection one of its punctuation.
func endsIndicator(data []byte, i int, inFlow bool) bool {
	if i >= len(data) {
		return true
	}
	switch c := data[i]; c {
	case ' ', '\t', '\r', '\n':
		return true
	case ',', '[', ']', '{', '}':
		return inFlow
	}
	return false
}

// yamlScan is the state of yamlNodes.
type yamlScan struct {
	data  []byte
	i     int
	col   int    // column of data[i] on its line
	flow  []byte // open flow collections: '[' or '{'
	nodes int
	// indent is the column of the line's first token, -1 before it.
	indent int
	// lastStart is the column of the line's last scalar or entry start:
	// a block scalar's lines are those indented past it.
	lastStart int
	// blockAt is, after a block scalar's header, the column its lines
	// are indented past; -1 otherwise.
	blockAt int
}

// yamlNodes is an upper bound on the nodes a YAML (or JSON) text parses
// to, aliases not expanded, counted without parsing: every scalar token
// (a tag, an anchor and an alias too) and every flow collection is a node,
// two in a flow mapping, where a key may stand alone with a null value;
// every block indicator ("- ", "? ", ": ") is the collection it may open
// and, when nothing follows it on its line, the empty node it may leave.
// Comments, quoted scalars that close on their line and block scalars'
// lines count once. It stops counting, and reports false, once the count
// passes limit or flow collections nest deeper than maxDepth.
func yamlNodes(data []byte, limit, maxDepth int) (int, bool) {
	// One for the first document's node, which needs no "---".
	s := &yamlScan{data: data, indent: -1, blockAt: -1, nodes: 1}
	for s.i < len(data) {
		if s.nodes > limit || len(s.flow) > maxDepth {
			return s.nodes, false
		}
		c := data[s.i]
		if isBreak(c) {
			s.i, s.col, s.indent = s.i+1, 0, -1
			continue
		}
		if isSpace(c) {
			s.i, s.col = s.i+1, s.col+1
			continue
		}
		if s.indent < 0 {
			s.indent = s.col
			if s.blockAt >= 0 && s.col > s.blockAt {
				s.skipLine() // a line of a block scalar
				continue
			}
			s.blockAt = -1
		}
		s.token(c)
	}
	return s.nodes, s.nodes <= limit && len(s.flow) <= maxDepth
}

// token counts the token that starts at s.i with byte c and moves past it.
func (s *yamlScan) token(c byte) {
	inFlow := len(s.flow) > 0
	inMap := inFlow && s.flow[len(s.flow)-1] == '{'
	switch {
	case c == '#':
		s.skipLine()
	case c == '[' || c == '{':
		s.nodes++
		if inMap {
			s.nodes++ // a key of its own, whose value may be empty
		}
		s.flow = append(s.flow, c)
		s.step()
	case c == ']' || c == '}':
		if inFlow {
			s.flow = s.flow[:len(s.flow)-1]
		}
		s.step()
	case c == ',' && inFlow:
		s.step()
	case (c == '-' || c == '?' || c == ':') && endsIndicator(s.data, s.i+1, inFlow):
		s.nodes += 2
		switch {
		case c == '?' || (c == ':' && inFlow && !inMap):
			// "?" alone is a mapping with a null key and value; ":" in a
			// flow sequence is a one-pair mapping of two nulls.
			s.nodes++
		case !inFlow && !s.restEmpty():
			// A block entry or value on its own line is not empty.
			s.nodes--
		}
		if c != ':' {
			s.lastStart = s.col
		}
		s.step()
	case (c == '|' || c == '>') && !inFlow:
		s.nodes++
		s.blockAt = s.lastStart
		s.skipLine()
	case c == '!' || c == '&' || c == '*':
		// A tag, an anchor or an alias: a token to the next space or
		// flow punctuation, which may stand for a node of its own.
		s.scalarStart(inMap)
		for s.step(); s.i < len(s.data) && !endsIndicator(s.data, s.i, true); {
			s.step()
		}
	case c == '"' || c == '\'':
		s.scalarStart(inMap)
		if !s.quoted(c) {
			s.plain(inFlow)
		}
	default:
		s.scalarStart(inMap)
		if c == '-' && s.col == 0 && len(s.data)-s.i >= 3 && string(s.data[s.i:s.i+3]) == "---" {
			s.nodes++ // a document: its node and, empty, its null
		}
		s.plain(inFlow)
	}
}

// scalarStart counts a scalar that starts here.
func (s *yamlScan) scalarStart(inMap bool) {
	s.nodes++
	if inMap {
		s.nodes++
	}
	s.lastStart = s.col
}

func (s *yamlScan) step() { s.i, s.col = s.i+1, s.col+1 }

// restEmpty reports whether the line holds nothing after the indicator
// at s.i but spaces and a comment.
func (s *yamlScan) restEmpty() bool {
	for j := s.i + 1; j < len(s.data); j++ {
		switch c := s.data[j]; {
		case isBreak(c) || c == '#':
			return true
		case !isSpace(c):
			return false
		}
	}
	return true
}

// skipLine moves to the line's end.
func (s *yamlScan) skipLine() {
	for s.i < len(s.data) && !isBreak(s.data[s.i]) {
		s.step()
	}
}

// quoted moves past a quoted scalar opened by q that closes on this
// line, and reports whether it did. One that goes on over lines is
// counted as plain text instead (more tokens, never fewer): a line that
// starts with a quote may as well be the rest of a plain scalar, and
// skipping to a closing quote further down could skip real nodes.
func (s *yamlScan) quoted(q byte) bool {
	for j := s.i + 1; j < len(s.data); j++ {
		switch c := s.data[j]; {
		case isBreak(c):
			return false
		case c == '\\' && q == '"':
			if j+1 < len(s.data) && isBreak(s.data[j+1]) {
				return false // an escaped line break
			}
			j++
		case c == q && q == '\'' && j+1 < len(s.data) && s.data[j+1] == '\'':
			j++
		case c == q:
			s.col += j + 1 - s.i
			s.i = j + 1
			return true
		}
	}
	return false
}

// plain moves past a plain scalar on this line: to a ": ", a " #" or,
// in a flow collection, its punctuation. A scalar that goes on over
// several lines counts once per line: more, never fewer.
func (s *yamlScan) plain(inFlow bool) {
	s.step()
	for s.i < len(s.data) {
		switch c := s.data[s.i]; {
		case isBreak(c):
			return
		case c == ':' && endsIndicator(s.data, s.i+1, inFlow):
			return
		case c == '#' && isSpace(s.data[s.i-1]):
			return
		case inFlow && (c == ',' || c == '[' || c == ']' || c == '{' || c == '}'):
			return
		}
		s.step()
	}
}

// jsonNodes counts the values of a JSON text, object keys included (each
// is a string the decoded object keeps), and the bytes of its strings and
// numbers, without decoding it: a string, a number, a literal, an array
// and an object are one node each. It stops counting, and reports false,
// once the nodes pass limit or arrays and objects nest deeper than
// maxDepth. The text is what a render worker sent, which the decoder that
// follows checks.
func jsonNodes(data []byte, limit, maxDepth int) (nodeCost, bool) {
	var c nodeCost
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			c.nodes++
			start := i
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			c.bytes += i - start - 1
		case '[', '{':
			c.nodes++
			if depth++; depth > maxDepth {
				return c, false
			}
			c.depth = max(c.depth, depth)
		case ']', '}':
			depth--
		case ' ', '\t', '\r', '\n', ',', ':':
		default:
			// A number or a literal: one node, to its end.
			c.nodes++
			start := i
			for i+1 < len(data) && !jsonDelim(data[i+1]) {
				i++
			}
			c.bytes += i + 1 - start
		}
		if c.nodes > limit {
			return c, false
		}
	}
	return c, true
}

// jsonDelim reports whether c ends a JSON number or literal.
func jsonDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ':', ']', '}', '[', '{', '"':
		return true
	}
	return false
}

// spendJSON counts the nodes and scalar bytes of raw, JSON a render
// worker sent for file (empty: the render's objects), against the
// render's budgets of what it renders, before anything decodes it.
func (t *treeFS) spendJSON(file string, raw []byte) error {
	c, ok := jsonNodes(raw, t.opts.MaxRenderNodes, t.opts.MaxDepth)
	if !ok && c.nodes <= t.opts.MaxRenderNodes {
		return t.refuse(limitf(file, "nesting depth", "the render worker sent JSON that nests deeper than %d levels", t.opts.MaxDepth))
	}
	return t.spend(file, c, true)
}

// collectAbove is the size of a decoded file past which the parent
// collects garbage at once (see AfterDecode).
const collectAbove = 1 << 20

// AfterDecode is called once the parent has decoded a file or a
// rendered manifest of size bytes and dropped what parsing it made: past
// 1 MiB it runs a garbage collection. Parsing allocates several times a
// file's size in garbage (yaml.v3's and yaml.v2's trees, the scanner's
// growing buffers, JSON on the way to objects), and the collector's pace
// lets the heap grow to twice what is live before it runs: without this
// the garbage of a few such files piles up into the peak.
func AfterDecode(size int) {
	if size > collectAbove {
		runtime.GC()
	}
}
