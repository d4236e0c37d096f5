package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/config"
)

// WorkloadError is one problem of a workload: the field it is about (a
// path such as "clients[0].arrival.rate"; "" for the file as a whole),
// what is wrong, and, when the workload was read from text, the file and
// line.
type WorkloadError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// Error renders "FILE:LINE: FIELD: MESSAGE", as compilers do; a workload
// read without a file name is "workload: line LINE: ...", and one built
// in code "workload: FIELD: MESSAGE".
func (e *WorkloadError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "workload: line %d: ", e.Line)
	default:
		b.WriteString("workload: ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// problems gathers a workload's errors.
type problems []*WorkloadError

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, &WorkloadError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems joined, or nil.
func (p problems) err() error {
	errs := make([]error, len(p))
	for i, e := range p {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// locate sets each problem's file and line, and orders them by line.
func (p problems) locate(file string, text []byte) {
	var fields []string
	for _, e := range p {
		if e.Line == 0 {
			fields = append(fields, e.Field)
		}
	}
	lines := config.FieldLines(text, fields...)
	for _, e := range p {
		e.File = file
		if e.Line == 0 {
			e.Line, lines = lines[0], lines[1:]
		}
	}
	slices.SortStableFunc(p, func(a, b *WorkloadError) int { return cmp.Compare(a.Line, b.Line) })
}

// parseWorkload reads a workload's text and reports every problem at
// once: the YAML itself (which alone can stop the reading); the shape of
// every value against the Workload type (unknown fields, a string where
// a number goes, a duration that does not parse); and Validate, run on
// what is left once the misshapen values are taken out, so that a file
// with both kinds of mistake gets both in one go. A Validate problem
// about a field that was taken out, or about one that holds it, is left
// out: it would only repeat the shape problem in other words. The JSON
// decoder alone would stop at the first wrong value and say little about
// where it is.
func parseWorkload(data []byte, file string) (*Workload, error) {
	j, err := yamlToJSON(data)
	if err != nil {
		return nil, yamlProblem(err, file, data).err()
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, (problems{{File: file, Msg: err.Error()}}).err()
	}
	var ps problems
	if tree == nil {
		ps.add("", "the workload is empty")
	} else if checkShape(&ps, "", reflect.TypeOf(Workload{}), tree) {
		var w Workload
		pruned, err := json.Marshal(tree)
		if err == nil {
			err = json.Unmarshal(pruned, &w)
		}
		if err != nil {
			// The misshapen values were taken out; this would be a bug.
			return nil, (problems{{File: file, Msg: err.Error()}}).err()
		}
		shaped := len(ps)
		for _, p := range w.problems() {
			if !touchesAny(p.Field, ps[:shaped]) {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			return &w, nil
		}
	}
	ps.locate(file, data)
	return nil, ps.err()
}

// touchesAny reports whether field is one of the problems' fields, or
// holds one, or is held by one.
func touchesAny(field string, ps problems) bool {
	for _, p := range ps {
		if within(field, p.Field) || within(p.Field, field) {
			return true
		}
	}
	return false
}

// within reports whether field is path or lies under it.
func within(field, path string) bool {
	if path == "" || field == path {
		return true
	}
	rest, ok := strings.CutPrefix(field, path)
	return ok && (rest[0] == '.' || rest[0] == '[')
}

// yamlProblem turns the YAML parser's error about data into a located
// problem. A parser that ran off the end names the line after the last;
// that is the last.
func yamlProblem(err error, file string, data []byte) problems {
	last := 1 + bytes.Count(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	msg := err.Error()
	e := &WorkloadError{File: file, Msg: msg}
	if i := strings.Index(msg, "line "); i >= 0 {
		digits := msg[i+5:]
		end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(digits)
		}
		if n, convErr := strconv.Atoi(digits[:end]); convErr == nil {
			e.Line = min(max(n, 1), last)
		}
	}
	return problems{e}
}

var durationType = reflect.TypeOf(Duration(0))

// checkShape reports every value of v, the generic JSON form of a value
// of type t at path, that decoding into t would refuse or lose: a field t
// does not have, a value of the wrong JSON type, a number out of range, a
// duration that does not parse. A null is a zero value and always fits.
// It takes each misfit out of the object or list that holds it (a list
// item becomes null), so that what is left decodes, and reports whether
// v itself can stay.
func checkShape(ps *problems, path string, t reflect.Type, v any) bool {
	if v == nil {
		return true
	}
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			ps.add(path, "a duration must be a string such as \"20ms\" or \"5m\", not %s", describe(v))
			return false
		}
		if _, err := time.ParseDuration(s); err != nil {
			ps.add(path, "invalid duration %q: %v", s, err)
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkShape(ps, path, t.Elem(), v)
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			ps.add(path, "must be an object, not %s", describe(v))
			return false
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && f.IsExported() {
				fields[name] = f.Type
			}
		}
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[k]
			if !ok {
				ps.add(join(path, k), "unknown field %q", k)
				delete(obj, k)
				continue
			}
			if !checkShape(ps, join(path, k), ft, obj[k]) {
				delete(obj, k)
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			ps.add(path, "must be an object, not %s", describe(v))
			return false
		}
		for _, k := range sortedKeys(obj) {
			if !checkShape(ps, join(path, k), t.Elem(), obj[k]) {
				delete(obj, k)
			}
		}
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			ps.add(path, "must be a list, not %s", describe(v))
			return false
		}
		for i, e := range list {
			if !checkShape(ps, fmt.Sprintf("%s[%d]", path, i), t.Elem(), e) {
				list[i] = nil
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			ps.add(path, "must be a string, not %s", describe(v))
			return false
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, ok := v.(json.Number)
		if !ok {
			ps.add(path, "must be an integer, not %s", describe(v))
			return false
		}
		i, err := strconv.ParseInt(string(n), 10, t.Bits())
		if err != nil || (t.Kind() == reflect.Int && (i > math.MaxInt || i < math.MinInt)) {
			ps.add(path, "must be an integer of at most %d bits, not %s", t.Bits(), n)
			return false
		}
	case reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			ps.add(path, "must be a number, not %s", describe(v))
			return false
		}
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			ps.add(path, "must be a number, not %s", n)
			return false
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			ps.add(path, "must be true or false, not %s", describe(v))
			return false
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describe names a generic JSON value for messages.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "null"
}
