package config

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
)

// document is one non-empty document of an input, converted to JSON.
type document struct {
	index int    // 0-based, counting non-empty documents only
	json  []byte // the document as JSON; nil when err is set
	err   error  // why the document could not be read as YAML or JSON
	text  []byte // the document as written (a part of the input, not a copy)
	line  int    // the input's line that text starts on, from 1
}

// utf8BOM is stripped from the front of inputs; editors on some platforms
// add it and neither parser wants it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// splitDocuments cuts an input into its documents. Two layouts are
// understood:
//   - a stream of JSON values (one or more objects, optionally separated by
//     whitespace), which is what `kubectl get -o json` and most programs
//     write;
//   - YAML documents separated by "---" lines, where each document may also
//     be JSON, since YAML reads JSON.
//
// JSON is tried first only when the input starts with '{', and any problem
// sends the whole input down the YAML path, whose errors are then the ones
// reported. Empty documents (nothing, comments, or null) are skipped and not
// counted, so that a leading or trailing "---" does not shift the numbering.
//
// Each document keeps its text and the line it starts on, so that errors
// can be located in the input (see Source).
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, utf8BOM)
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		skipped := len(data) - len(trimmed)
		if docs, ok := splitJSONStream(trimmed, 1+bytes.Count(data[:skipped], []byte("\n"))); ok {
			return docs
		}
	}
	return splitYAML(data)
}

// splitJSONStream reads consecutive JSON values from data, which starts on
// line first of the input. It reports false if the input is not entirely
// a JSON stream.
func splitJSONStream(data []byte, first int) ([]document, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []document
	line, counted := first, 0 // the line of byte counted
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, true
		}
		if err != nil {
			return nil, false
		}
		if isNull(raw) {
			continue
		}
		// The decoder stops right after the value, and raw is the value's
		// exact bytes, so the value starts len(raw) bytes back.
		start := int(dec.InputOffset()) - len(raw)
		line += bytes.Count(data[counted:start], []byte("\n"))
		counted = start
		docs = append(docs, document{index: len(docs), json: raw, text: raw, line: line})
	}
}

// splitYAML cuts data at document separators and converts each piece.
func splitYAML(data []byte) []document {
	var docs []document
	line := 1
	for _, chunk := range yamlChunks(data) {
		j, err := yamlToJSON(chunk)
		if err == nil && isNull(j) {
			line += bytes.Count(chunk, []byte("\n"))
			continue
		}
		docs = append(docs, document{index: len(docs), json: j, err: err, text: chunk, line: line})
		line += bytes.Count(chunk, []byte("\n"))
	}
	return docs
}

// yamlChunks splits data into single YAML documents. A line that starts
// with the document-start marker "---" (followed by a blank or the end of
// the line) begins a new chunk and stays in it, since the marker may carry
// content ("--- {a: 1}"). A line with the document-end marker "..." ends the
// current chunk. Splitting matters because the YAML parser reads only the
// first document of what it is given and would silently drop the rest.
func yamlChunks(data []byte) [][]byte {
	var chunks [][]byte
	start := 0
	for pos := 0; pos < len(data); {
		next := len(data)
		if end := bytes.IndexByte(data[pos:], '\n'); end >= 0 {
			next = pos + end + 1
		}
		line := data[pos:next]
		switch {
		case isMarker(line, "---"):
			chunks = append(chunks, data[start:pos])
			start = pos
		case isMarker(line, "..."):
			chunks = append(chunks, data[start:next])
			start = next
		}
		pos = next
	}
	return append(chunks, data[start:])
}

// isMarker reports whether line starts with the three-character YAML
// marker followed by whitespace or nothing.
func isMarker(line []byte, marker string) bool {
	rest, ok := bytes.CutPrefix(line, []byte(marker))
	return ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r' || rest[0] == '\n')
}

// isNull reports whether a JSON value is null, which is what an empty YAML
// document converts to.
func isNull(j []byte) bool {
	return bytes.Equal(bytes.TrimSpace(j), []byte("null"))
}

// IsManifestFile reports whether a file name has one of the endings that
// directories of manifests are read for: .yaml, .yml or .json, in any case.
func IsManifestFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
