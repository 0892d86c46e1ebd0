// Paths: where a job's state sits in a JSON status document.

package jobpoll

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Path is the location of a field in a JSON document, such as "status",
// "properties.status" or "operations[0].state". Make one with ParsePath;
// the zero Path is empty and finds nothing.
type Path struct {
	steps []step
}

// step is one move into a document: into an object's member, or into an
// array's element.
type step struct {
	key   string
	index int
	elem  bool // an array index, not an object key
}

// maxIndex bounds array indexes in a path, so that they never overflow.
const maxIndex = 1<<31 - 1

// ParsePath parses a dot path. Object members are separated by dots; an
// array element is a decimal index in brackets after a member, or at the
// start: "[0].status". A backslash makes the next character part of the
// member name, so that names may hold '.', '[', ']' or '\'. An empty path,
// an empty member name, or a malformed index is an error.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, errors.New("jobpoll: empty field path")
	}
	var p Path
	i := 0
	first := true
	for {
		// A member name, which only the first segment may leave out, and
		// only before an index.
		var key strings.Builder
		named := false
		for i < len(s) && s[i] != '.' && s[i] != '[' {
			c := s[i]
			switch c {
			case ']':
				return Path{}, fmt.Errorf("jobpoll: field path %q: unexpected ']' at %d", s, i)
			case '\\':
				if i+1 == len(s) {
					return Path{}, fmt.Errorf("jobpoll: field path %q: trailing backslash", s)
				}
				i++
				c = s[i]
			}
			key.WriteByte(c)
			named = true
			i++
		}
		switch {
		case named:
			p.steps = append(p.steps, step{key: key.String()})
		case !first || i == len(s) || s[i] != '[':
			return Path{}, fmt.Errorf("jobpoll: field path %q: empty name at %d", s, i)
		}
		first = false
		// Any number of indexes.
		for i < len(s) && s[i] == '[' {
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return Path{}, fmt.Errorf("jobpoll: field path %q: unclosed '[' at %d", s, i)
			}
			digits := s[i+1 : i+end]
			n, err := parseIndex(digits)
			if err != nil {
				return Path{}, fmt.Errorf("jobpoll: field path %q: index %q at %d: %v", s, digits, i, err)
			}
			p.steps = append(p.steps, step{index: n, elem: true})
			i += end + 1
		}
		if i == len(s) {
			return p, nil
		}
		if s[i] != '.' {
			return Path{}, fmt.Errorf("jobpoll: field path %q: expected '.' or '[' at %d", s, i)
		}
		i++
		if i == len(s) {
			return Path{}, fmt.Errorf("jobpoll: field path %q: trailing '.'", s)
		}
	}
}

// parseIndex parses an array index: decimal digits only, at most maxIndex.
func parseIndex(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not a decimal number")
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > maxIndex {
		return 0, errors.New("too large")
	}
	return int(n), nil
}

// String returns the path in the form ParsePath reads, escaping what must
// be escaped; ParsePath(p.String()) gives p back.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p.steps {
		if s.elem {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		for j := 0; j < len(s.key); j++ {
			switch c := s.key[j]; c {
			case '.', '[', ']', '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

// Lookup reads the field at p in the JSON document doc and returns it as a
// string: a JSON string as it is, a number as written, a boolean as "true"
// or "false". A document that is not one JSON value, a missing field, a
// null, an object or an array is a *FieldError.
func (p Path) Lookup(doc []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", &FieldError{Path: p.String(), Reason: "body is not JSON", Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", &FieldError{Path: p.String(), Reason: "body is not JSON: more than one value"}
	}
	if len(p.steps) == 0 {
		return "", &FieldError{Path: p.String(), Reason: "empty path"}
	}
	for i, s := range p.steps {
		at := Path{steps: p.steps[:i+1]}
		if s.elem {
			a, ok := v.([]any)
			if !ok {
				return "", &FieldError{Path: at.String(), Reason: "not in an array: " + kind(v)}
			}
			if s.index >= len(a) {
				return "", &FieldError{Path: at.String(), Reason: "missing: array has " + strconv.Itoa(len(a)) + " elements"}
			}
			v = a[s.index]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return "", &FieldError{Path: at.String(), Reason: "not in an object: " + kind(v)}
		}
		if v, ok = m[s.key]; !ok {
			return "", &FieldError{Path: at.String(), Reason: "missing"}
		}
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	return "", &FieldError{Path: p.String(), Reason: "not a string, number or boolean: " + kind(v)}
}

// kind names the JSON type of a decoded value, for errors.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// FieldError says why a JSON document has no usable value at a path.
type FieldError struct {
	// Path is the path, as far as it could be followed, in ParsePath form.
	Path string
	// Reason is what was wrong there, such as "missing", "not in an
	// object: a string" or "body is not JSON".
	Reason string
	// Err is the JSON decoder's error, if any.
	Err error
}

// Error returns "jobpoll: field PATH: REASON", and Err if any.
func (e *FieldError) Error() string {
	s := "jobpoll: field " + e.Path + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }
