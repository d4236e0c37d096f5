package config

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// canonicalize brings the parts of a decoded hub object that have several
// in-memory spellings for one wire form to a single spelling, so that
// decoding what Encode wrote gives back an equal object:
//   - Times carry whole seconds on the wire (RFC 3339 without fraction, in
//     UTC) but the parser accepts fractions and offsets; they are truncated
//     here, exactly as storing the object and reading it back would do. A
//     time whose UTC form has no 4-digit year (9999-12-31T23:00:00-05:00)
//     could be read but never written back, so it is an error.
//   - managedFields[].fieldsV1 is JSON kept as raw bytes and compared
//     byte-wise, so key order and spacing, which differ between a JSON and a
//     YAML input, would make equal objects unequal. It is re-encoded in one
//     form (compact, keys sorted). It must be what the field is for, a
//     field set: nested objects whose keys are "." or start with "f:", "v:",
//     "i:" or "k:". Anything else is an error. Without that rule, a key such
//     as "<<" (a YAML merge key) or a number with no exact float form could
//     be read but not written back.
func canonicalize(o Object) error {
	var c canonicalizer
	switch {
	case o.FlowSchema != nil:
		c.meta(&o.FlowSchema.ObjectMeta)
		for i := range o.FlowSchema.Status.Conditions {
			c.time(&o.FlowSchema.Status.Conditions[i].LastTransitionTime, "status.conditions[%d].lastTransitionTime", i)
		}
	case o.PriorityLevel != nil:
		c.meta(&o.PriorityLevel.ObjectMeta)
		for i := range o.PriorityLevel.Status.Conditions {
			c.time(&o.PriorityLevel.Status.Conditions[i].LastTransitionTime, "status.conditions[%d].lastTransitionTime", i)
		}
	}
	return c.err
}

// canonicalizer keeps the first error met while canonicalizing.
type canonicalizer struct{ err error }

// meta does canonicalize's work on metadata.
func (c *canonicalizer) meta(m *metav1.ObjectMeta) {
	c.time(&m.CreationTimestamp, "metadata.creationTimestamp")
	if m.DeletionTimestamp != nil {
		c.time(m.DeletionTimestamp, "metadata.deletionTimestamp")
	}
	for i := range m.ManagedFields {
		mf := &m.ManagedFields[i]
		if mf.Time != nil {
			c.time(mf.Time, "metadata.managedFields[%d].time", i)
		}
		if raw := mf.FieldsV1.GetRawBytes(); len(raw) > 0 && c.err == nil {
			canon, err := canonicalFieldSet(raw)
			if err != nil {
				c.err = &pathError{path: fmt.Sprintf("metadata.managedFields[%d].fieldsV1", i), err: err}
				return
			}
			mf.FieldsV1.SetRawBytes(canon)
		}
	}
}

// time truncates t to whole seconds, keeping the zero time zero, and checks
// that it can be written back.
func (c *canonicalizer) time(t *metav1.Time, path string, args ...any) {
	if t.IsZero() {
		return
	}
	t.Time = t.Time.Truncate(time.Second)
	if y := t.UTC().Year(); (y < 0 || y > 9999) && c.err == nil {
		c.err = &pathError{path: fmt.Sprintf(path, args...), err: fmt.Errorf("time %s is outside the years 0000-9999 that RFC 3339 can write", t.UTC().Format(time.RFC3339))}
	}
}

// yamlToJSON converts one YAML (or JSON) document to JSON, rejecting
// duplicate keys. The YAML parser is a large third-party state machine that
// has had panics on malformed input in its history; Decode promises never to
// panic, so a panic here is turned into an error.
func yamlToJSON(doc []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("yaml: parser failed on this input: %v", r)
		}
	}()
	return yaml.YAMLToJSONStrict(doc)
}

// canonicalFieldSet checks that raw is a field set (see canonicalize) and
// returns it compact with sorted keys.
func canonicalFieldSet(raw []byte) ([]byte, error) {
	var set map[string]any
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("not a field set: %w", err)
	}
	if err := checkFieldSet(set); err != nil {
		return nil, err
	}
	return json.Marshal(set)
}

// checkFieldSet walks a decoded field set.
func checkFieldSet(set map[string]any) error {
	for k, v := range set {
		if k != "." && !hasFieldSetPrefix(k) {
			return fmt.Errorf("not a field set: key %q is not \".\" and has no f:, v:, i: or k: prefix", k)
		}
		sub, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("not a field set: the value of %q is not an object", k)
		}
		if err := checkFieldSet(sub); err != nil {
			return err
		}
	}
	return nil
}

// hasFieldSetPrefix reports whether k starts like a field-set path element.
func hasFieldSetPrefix(k string) bool {
	if len(k) < 2 || k[1] != ':' {
		return false
	}
	switch k[0] {
	case 'f', 'v', 'i', 'k':
		return true
	}
	return false
}
