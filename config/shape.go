package config

import (
	"fmt"
	"reflect"
	"sync"
)

// This file holds the one piece of reflection in the package: a copier
// between two Go types of the same shape.
//
// The five API versions declare their own Go types, but those types are
// field-for-field identical except where the API really changed (the shares
// field's name and pointer-ness). Hand-written converters would be some
// thousand lines of "out.X = in.X" per version pair, and the usual failure of
// such code is a silently forgotten field. copyShape instead walks both types
// together and fails loudly if any field lacks a counterpart, so a future
// k8s.io/api field that this package does not know about breaks the tests
// rather than vanishing on conversion. The semantic differences between
// versions are handled explicitly, in convert.go, around the copy.

// shapeAliases pairs field names that mean the same thing in different
// versions. assuredConcurrencyShares (v1alpha1..v1beta2) was renamed to
// nominalConcurrencyShares in v1beta3.
var shapeAliases = map[string]string{
	"AssuredConcurrencyShares": "NominalConcurrencyShares",
	"NominalConcurrencyShares": "AssuredConcurrencyShares",
}

// fieldPair maps the index of a source struct field to the index of the
// destination field it is copied into.
type fieldPair struct{ src, dst int }

// shapeKey identifies a (destination, source) type pair in shapeCache.
type shapeKey struct{ dst, src reflect.Type }

// shapeEntry is the cached result of matching two struct types.
type shapeEntry struct {
	pairs []fieldPair
	err   error
}

// shapeCache memoises fieldPairs: the set of type pairs is small and fixed,
// and matching by name on every conversion would be wasted work.
var shapeCache sync.Map // shapeKey -> shapeEntry

// copyShape copies *src into *dst. Both must be non-nil pointers to structs
// of the same shape in the sense described above. Values of identical types
// (metadata, times) are assigned, not copied, so callers pass a private deep
// copy as src.
func copyShape(dst, src any) error {
	d, s := reflect.ValueOf(dst), reflect.ValueOf(src)
	if d.Kind() != reflect.Pointer || d.IsNil() || s.Kind() != reflect.Pointer || s.IsNil() {
		return fmt.Errorf("config: copyShape needs two non-nil pointers, got %T and %T", dst, src)
	}
	return copyValue(d.Elem(), s.Elem())
}

// copyValue copies s into the settable value d.
func copyValue(d, s reflect.Value) error {
	if d.Type() == s.Type() {
		d.Set(s)
		return nil
	}
	dk, sk := d.Kind(), s.Kind()
	switch {
	case dk == reflect.Struct && sk == reflect.Struct:
		pairs, err := fieldPairs(d.Type(), s.Type())
		if err != nil {
			return err
		}
		for _, p := range pairs {
			if err := copyValue(d.Field(p.dst), s.Field(p.src)); err != nil {
				return err
			}
		}
		return nil
	case dk == reflect.Pointer && sk == reflect.Pointer:
		if s.IsNil() {
			d.SetZero()
			return nil
		}
		d.Set(reflect.New(d.Type().Elem()))
		return copyValue(d.Elem(), s.Elem())
	case sk == reflect.Pointer:
		// *T into T: nil becomes the zero value. The only such field is the
		// v1 *int32 shares going into an older int32; there nil and 0 both
		// mean "default", so nothing is lost (convert.go handles a real 0).
		if s.IsNil() {
			d.SetZero()
			return nil
		}
		return copyValue(d, s.Elem())
	case dk == reflect.Pointer:
		// T into *T: always allocate. A defaulted older object has no
		// "unset" left, so its value is meant literally.
		d.Set(reflect.New(d.Type().Elem()))
		return copyValue(d.Elem(), s)
	case dk == reflect.Slice && sk == reflect.Slice:
		if s.IsNil() {
			d.SetZero()
			return nil
		}
		n := s.Len()
		out := reflect.MakeSlice(d.Type(), n, n)
		for i := 0; i < n; i++ {
			if err := copyValue(out.Index(i), s.Index(i)); err != nil {
				return err
			}
		}
		d.Set(out)
		return nil
	case dk == reflect.String && sk == reflect.String:
		d.SetString(s.String())
		return nil
	case dk == reflect.Int32 && sk == reflect.Int32:
		d.SetInt(s.Int())
		return nil
	case dk == reflect.Bool && sk == reflect.Bool:
		d.SetBool(s.Bool())
		return nil
	}
	return fmt.Errorf("config: cannot convert %s to %s", s.Type(), d.Type())
}

// fieldPairs matches the fields of two struct types by name (or alias). The
// match must be a bijection over exported fields, and there must be no
// unexported fields, or the types are not of the same shape.
func fieldPairs(dst, src reflect.Type) ([]fieldPair, error) {
	key := shapeKey{dst, src}
	if e, ok := shapeCache.Load(key); ok {
		e := e.(shapeEntry)
		return e.pairs, e.err
	}
	pairs, err := matchFields(dst, src)
	shapeCache.Store(key, shapeEntry{pairs, err})
	return pairs, err
}

// matchFields does the work for fieldPairs.
func matchFields(dst, src reflect.Type) ([]fieldPair, error) {
	if dst.NumField() != src.NumField() {
		return nil, fmt.Errorf("config: %s has %d fields but %s has %d", src, src.NumField(), dst, dst.NumField())
	}
	pairs := make([]fieldPair, 0, src.NumField())
	used := make(map[int]bool, dst.NumField())
	for i := 0; i < src.NumField(); i++ {
		sf := src.Field(i)
		if !sf.IsExported() {
			return nil, fmt.Errorf("config: %s has unexported field %s", src, sf.Name)
		}
		df, ok := dst.FieldByName(sf.Name)
		if !ok {
			if alias, has := shapeAliases[sf.Name]; has {
				df, ok = dst.FieldByName(alias)
			}
		}
		if !ok || len(df.Index) != 1 || !df.IsExported() || used[df.Index[0]] {
			return nil, fmt.Errorf("config: field %s.%s has no counterpart in %s", src, sf.Name, dst)
		}
		used[df.Index[0]] = true
		pairs = append(pairs, fieldPair{src: i, dst: df.Index[0]})
	}
	return pairs, nil
}
