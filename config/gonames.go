package config

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// goNamed is a value that a field error renders as JSON with Go's field
// names and no field left out (`{"Type":"ByGroup"}`), which is how the API
// server prints the structs it validates: its internal types carry no
// JSON tags. Validation messages that quote a struct (an unsupported
// distinguisher method, the spec of a mandatory object) use it so that they
// read exactly as kube-apiserver's.
type goNamed struct{ v any }

func (g goNamed) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := writeGoNamed(&b, reflect.ValueOf(g.v)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeGoNamed(b *bytes.Buffer, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("null")
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeGoNamed(b, v.Elem())
	case reflect.Struct:
		b.WriteByte('{')
		first := true
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			name, _ := json.Marshal(f.Name)
			b.Write(name)
			b.WriteByte(':')
			if err := writeGoNamed(b, v.Field(i)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeGoNamed(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		// Strings (named string types included), numbers and booleans
		// are what encoding/json makes of them.
		j, err := json.Marshal(v.Interface())
		if err != nil {
			return err
		}
		b.Write(j)
	}
	return nil
}
