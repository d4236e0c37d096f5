package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apfproject/apf/config"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The merges below put apf's flowcontrol group into an upstream API
// server's documents. They work on the JSON text, not on Go types: every
// member and every other group is passed on exactly as the upstream wrote
// it, in its order, including fields a newer upstream has and these types
// do not. Only the flowcontrol entry is replaced (or added at the end when
// the upstream has none), and the result is compacted.

// member is one member of a JSON object, its value as written.
type member struct {
	key   string
	value json.RawMessage
}

// decodeObject splits a JSON object into its members, in order. A
// document that is not one object, or names a member twice, is an error:
// which of two values a client would read is not ours to guess.
func decodeObject(b []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("malformed JSON object")
		}
		if seen[key] {
			return nil, fmt.Errorf("member %q appears twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return out, nil
}

// encodeObject writes members as a compact JSON object.
func encodeObject(ms []member) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, m.value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// findMember returns the index of the member named key, or -1.
func findMember(ms []member, key string) int {
	return slices.IndexFunc(ms, func(m member) bool { return m.key == key })
}

// spliceList replaces, in the array that is member list of the object
// ms, the element that nameOf names config.Group with the one replace
// returns (given the element replaced, or nil when there is none, and
// then appended), and encodes the object. An element nameOf cannot read
// is an error.
func spliceList(ms []member, list string, nameOf func(json.RawMessage) (string, error), replace func(old json.RawMessage) ([]byte, error)) ([]byte, error) {
	i := findMember(ms, list)
	if i < 0 {
		return nil, fmt.Errorf("no %q member", list)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(ms[i].value, &items); err != nil {
		return nil, fmt.Errorf("%q: %w", list, err)
	}
	at := -1
	for j, it := range items {
		name, err := nameOf(it)
		if err != nil {
			return nil, fmt.Errorf("%q[%d]: %w", list, j, err)
		}
		if name == config.Group {
			if at >= 0 {
				return nil, fmt.Errorf("%q lists %s twice", list, config.Group)
			}
			at = j
		}
	}
	var old json.RawMessage
	if at >= 0 {
		old = items[at]
	}
	entry, err := replace(old)
	if err != nil {
		return nil, err
	}
	if at >= 0 {
		items[at] = entry
	} else {
		items = append(items, entry)
	}
	if ms[i].value, err = json.Marshal(items); err != nil {
		return nil, err
	}
	return encodeObject(ms)
}

// mergeGroupList puts group (apf's flowcontrol group) into an upstream's
// APIGroupList in place of its own flowcontrol entry. The entry keeps the
// upstream's serverAddressByClientCIDRs, so that every group of the list
// says the same about where the server is; with no entry to replace, the
// first group's are used.
func mergeGroupList(doc []byte, group metav1.APIGroup) ([]byte, error) {
	ms, err := decodeObject(doc)
	if err != nil {
		return nil, err
	}
	if err := expectKind(ms, "APIGroupList", "v1"); err != nil {
		return nil, err
	}
	type named struct {
		Name    string                             `json:"name"`
		Servers []metav1.ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs"`
	}
	var first []metav1.ServerAddressByClientCIDR
	nameOf := func(raw json.RawMessage) (string, error) {
		var n named
		if err := json.Unmarshal(raw, &n); err != nil {
			return "", err
		}
		if first == nil {
			first = n.Servers
		}
		return n.Name, nil
	}
	return spliceList(ms, "groups", nameOf, func(old json.RawMessage) ([]byte, error) {
		g := group
		g.ServerAddressByClientCIDRs = first
		if old != nil {
			var n named
			if err := json.Unmarshal(old, &n); err != nil {
				return nil, err
			}
			g.ServerAddressByClientCIDRs = n.Servers
		}
		return json.Marshal(&g)
	})
}

// mergeAggregated puts entry (apf's flowcontrol group, encoded) into an
// upstream's aggregated APIGroupDiscoveryList in place of its own, at the
// position the upstream gives the group.
func mergeAggregated(doc []byte, entry []byte) ([]byte, error) {
	ms, err := decodeObject(doc)
	if err != nil {
		return nil, err
	}
	if err := expectKind(ms, "APIGroupDiscoveryList", "apidiscovery.k8s.io/v2"); err != nil {
		return nil, err
	}
	nameOf := func(raw json.RawMessage) (string, error) {
		var n struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		err := json.Unmarshal(raw, &n)
		return n.Metadata.Name, err
	}
	return spliceList(ms, "items", nameOf, func(json.RawMessage) ([]byte, error) { return entry, nil })
}

// mergeOpenAPIV3Index replaces the flowcontrol group's entries of an
// upstream's OpenAPI 3 index with paths (apf's, which point at apf's own
// documents with their own hashes). Every upstream entry of the group
// goes, also for a version apf does not serve: apf answers every
// document of the group itself, so such an entry would lead to a 404. The
// entries stay in key order, as the upstream's encoder writes them.
func mergeOpenAPIV3Index(doc []byte, paths map[string]v3Path) ([]byte, error) {
	ms, err := decodeObject(doc)
	if err != nil {
		return nil, err
	}
	i := findMember(ms, "paths")
	if i < 0 {
		return nil, errors.New(`no "paths" member`)
	}
	var upstream map[string]json.RawMessage
	if err := json.Unmarshal(ms[i].value, &upstream); err != nil || upstream == nil {
		return nil, fmt.Errorf(`"paths" is not an object: %v`, err)
	}
	merged := make(map[string]json.RawMessage, len(upstream)+len(paths))
	prefix := "apis/" + config.Group + "/"
	for k, v := range upstream {
		if !strings.HasPrefix(k, prefix) {
			merged[k] = v
		}
	}
	for k, v := range paths {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		merged[k] = b
	}
	// encoding/json writes map keys sorted.
	if ms[i].value, err = json.Marshal(merged); err != nil {
		return nil, err
	}
	return encodeObject(ms)
}

// expectKind checks a document's kind and apiVersion members.
func expectKind(ms []member, kind, apiVersion string) error {
	var got [2]string
	for j, key := range []string{"kind", "apiVersion"} {
		if i := findMember(ms, key); i >= 0 {
			if err := json.Unmarshal(ms[i].value, &got[j]); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	if got[0] != kind || got[1] != apiVersion {
		return fmt.Errorf("a %s %s, not a %s %s", got[1], got[0], apiVersion, kind)
	}
	return nil
}
