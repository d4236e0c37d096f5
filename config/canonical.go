package config

import (
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
//   - managedFields[].fieldsV1 is opaque JSON kept as raw bytes, compared
//     byte-wise. Whether it came in through YAML (keys sorted, numbers
//     retyped) or JSON (as written) would otherwise change those bytes; it is
//     put in the form the YAML path produces, which is a fixed point of both.
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
		if raw := mf.FieldsV1.GetRawBytes(); len(raw) > 0 {
			if j, err := yamlToJSON(raw); err == nil {
				mf.FieldsV1.SetRawBytes(j)
			}
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
		c.err = fmt.Errorf("%s: time %s is outside the years 0000-9999 that RFC 3339 can write", fmt.Sprintf(path, args...), t.UTC().Format(time.RFC3339))
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
