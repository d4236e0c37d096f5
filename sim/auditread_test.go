package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// readLines runs a lineReader over input and renders what it made of
// each line: the kept object, or "skip: " and the reason.
func readLines(t *testing.T, input []byte) ([]string, *lineReader) {
	t.Helper()
	lr, _, err := newLineReader(bytes.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		obj, skip, err := lr.next()
		if err == io.EOF {
			return out, lr
		}
		if err != nil {
			t.Fatal(err)
		}
		if skip != nil {
			out = append(out, "skip: "+skip.Error())
			continue
		}
		out = append(out, string(obj))
	}
}

func TestLineReader(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"kept as is", `{"a":1,"b":"x"}`, []string{`{"a":1,"b":"x"}`}},
		{"whitespace dropped", " { \"a\" : [ 1 , 2 ] ,\t\"b\" : { } } \r\n", []string{`{"a":[1,2],"b":{}}`}},
		{"bodies dropped", `{"level":"RequestResponse","requestObject":{"kind":"Pod","spec":{"x":[1,{"y":"}"}]}},"verb":"create","responseObject":{"a":"\"]}"},"stage":"ResponseComplete"}`,
			[]string{`{"level":"RequestResponse","verb":"create","stage":"ResponseComplete"}`}},
		{"body first", `{"requestObject":null,"a":1}`, []string{`{"a":1}`}},
		{"only bodies", `{"requestObject":[],"responseObject":"x"}`, []string{`{}`}},
		{"escaped name is not a body", `{"request\u004fbject":1}`, []string{`{"request\u004fbject":1}`}},
		{"escapes kept", `{"u":"a\"b\\c\u00e9\n"}`, []string{`{"u":"a\"b\\c\u00e9\n"}`}},
		{"literals", `{"t":true,"f":false,"n":null,"x":-1.5e+3}`, []string{`{"t":true,"f":false,"n":null,"x":-1.5e+3}`}},
		{"blank lines", "\n  \n{}\n\r\n\n", []string{`{}`}},
		{"no final newline", "{}\n{\"a\":1}", []string{`{}`, `{"a":1}`}},
		{"several lines", "{\"a\":1}\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}},
		{"text", "2017-06-23T12:34:56.1Z AUDIT: id=\"x\" stage=\"ResponseComplete\"\n{}",
			[]string{`skip: column 11: 'T' after the JSON value`, `{}`}},
		{"not an object", "[1,2]\n\"s\"\n7\n{}", []string{"skip: " + errNotObject.Error(), "skip: " + errNotObject.Error(), "skip: " + errNotObject.Error(), `{}`}},
		{"cut line", "{\"a\":\"xy\n{\"b\":1}\n", []string{`skip: column 9: the line ends inside a string`, `{"b":1}`}},
		{"cut in a body", "{\"requestObject\":{\"a\":[1,\n{\"b\":1}", []string{`skip: column 26: the line ends inside its JSON`, `{"b":1}`}},
		{"cut at the end", `{"a":1,"requestObject":{"b":`, []string{`skip: column 28: the line ends inside its JSON`}},
		{"trailing junk", "{} x\n{}", []string{`skip: column 4: 'x' after the JSON value`, `{}`}},
		{"two objects", "{}{}\n", []string{`skip: column 3: '{' after the JSON value`}},
		{"missing colon", `{"a" 1}`, []string{`skip: column 6: '1' after a member's name`}},
		{"bare name", `{a:1}`, []string{`skip: column 2: 'a' where a member's name should be`}},
		{"trailing comma", `{"a":1,}`, []string{`skip: column 8: '}' where a member's name should be`}},
		{"bad literal", `{"a":tru}`, []string{`skip: column 9: '}' inside a literal`}},
		{"bad escape", `{"a":"\q"}`, []string{`skip: column 8: invalid escape \q`}},
		{"bad unicode", `{"a":"\u12g4"}`, []string{`skip: column 11: 'g' in a \u escape`}},
		{"control", "{\"a\":\"\x01\"}", []string{`skip: column 7: control character '\x01' inside a string`}},
		{"bad in body", `{"responseObject":{"a":[1 2]}}`, []string{`skip: column 27: '2' inside a value`}},
		{"nul", "\x00\xff\n{}", []string{`skip: column 1: '\x00' where a value should be`, `{}`}},
	} {
		got, _ := readLines(t, []byte(c.in))
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		for _, g := range got {
			if !strings.HasPrefix(g, "skip: ") && !json.Valid([]byte(g)) {
				t.Errorf("%s: kept invalid JSON %q", c.name, g)
			}
		}
	}
}

// TestLineReaderLargeLines: a body of many megabytes passes through
// without being kept (the buffer stays at the kept members' size), while
// kept members over maxKept skip the line, and deep nesting is refused.
func TestLineReaderLargeLines(t *testing.T) {
	var big bytes.Buffer
	big.WriteString(`{"kind":"Event","responseObject":{"kind":"PodList","items":[`)
	for i := range 40000 {
		if i > 0 {
			big.WriteByte(',')
		}
		big.WriteString(`{"metadata":{"name":"pod-with-a-long-name","namespace":"default"},"spec":{"containers":[{"image":"registry.example.com/app:1.4.2"}]}}`)
	}
	big.WriteString(`]},"stage":"ResponseComplete"}` + "\n")
	if big.Len() < 5<<20 {
		t.Fatalf("the body is only %d bytes", big.Len())
	}
	big.WriteString(`{"annotations":{"a":"` + strings.Repeat("x", maxKept) + `"}}` + "\n")
	big.WriteString(`{"responseObject":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + "}\n")
	big.WriteString(`{"responseObject":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "}\n")
	got, lr := readLines(t, big.Bytes())
	want := []string{`{"kind":"Event","stage":"ResponseComplete"}`, "skip: " + errTooLarge.Error(), "skip: column 10019: nested too deeply", "{}"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %.200q, want %q", got, want)
	}
	if cap(lr.kept) > 2*maxKept+64<<10 {
		t.Errorf("kept buffer grew to %d bytes", cap(lr.kept))
	}
}

// TestLineReaderGzip: a gzip-compressed log (several members, as
// concatenated archives are) reads as the plain one; a corrupt one is an
// error, not a skip.
func TestLineReaderGzip(t *testing.T) {
	var z bytes.Buffer
	for _, part := range []string{"{\"a\":1}\n", "{\"b\":2}\n"} {
		w := gzip.NewWriter(&z)
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := readLines(t, z.Bytes())
	if strings.Join(got, " ") != `{"a":1} {"b":2}` {
		t.Fatalf("got %q", got)
	}
	corrupt := bytes.Clone(z.Bytes())
	corrupt[len(corrupt)-6] ^= 0xff // the last member's checksum
	lr, _, err := newLineReader(bytes.NewReader(corrupt))
	for err == nil {
		_, _, err = lr.next()
	}
	if err == io.EOF {
		t.Fatal("a corrupt gzip stream read to its end")
	}
	if _, _, err := newLineReader(bytes.NewReader([]byte{0x1f, 0x8b, 0})); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a truncated gzip header: %v", err)
	}
}
