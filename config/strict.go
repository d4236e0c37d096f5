package config

// Strict, located decoding for kinds of other packages (this file): a
// configuration file of another kind (a gateway's routes, say) is read with
// the same rules as a FlowSchema manifest. Its documents are split and
// converted as Decode splits and converts them, decoded strictly (an
// unknown or duplicated field is an error naming it), and every error,
// the caller's validation errors too (Source.At), names the line it is
// about.

// Document is one non-empty document of an input, as Documents returns it.
type Document struct {
	// JSON is the document converted to JSON.
	JSON []byte
	// Source locates the document; its At locates any of its fields.
	Source Source
}

// Documents splits data into its non-empty YAML or JSON documents, as
// Decode does (YAML separated by "---", or a stream of JSON values), and
// converts each to JSON. A document that cannot be read as YAML or JSON
// is not returned: it is reported in errs instead, as a *DecodeError with
// the line the parser names. file only labels the sources.
func Documents(data []byte, file string) (docs []Document, errs []error) {
	for _, doc := range splitDocuments(data) {
		pos := newFieldPositions(doc.text, doc.line)
		src := Source{File: file, Doc: doc.index, Item: -1, Line: pos.start(), pos: pos}
		if doc.err != nil {
			errs = append(errs, yamlError(src, doc.err, doc.line, doc.text))
			continue
		}
		docs = append(docs, Document{JSON: doc.json, Source: src})
	}
	return docs, errs
}

// DecodeStrict decodes a document into v (a pointer to a struct with JSON
// tags) as Decode decodes an object: field names are matched case
// sensitively, and an unknown or duplicated field is an error naming the
// field at its line, one *DecodeError each; the rest of v is still filled.
// fatal is true when v could not be read at all (a value of the wrong
// type, say); the error then names the field where the decoder stopped.
func DecodeStrict(doc Document, v any) (errs []error, fatal bool) {
	des, fatal := strictUnmarshal(doc.JSON, v, doc.Source)
	return asErrors(des), fatal
}
