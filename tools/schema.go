package tools

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Schema returns the JSON schema of the tool's arguments, as sent to the model, generated from
// the declaration by the rules of document 2:
//
//   - inherited parameters (through Base) come first, then the tool's own, each in declaration
//     order, which is the property order of the output;
//   - with two or more operations a required string property named by the discriminator key
//     (default "action") comes first, its enum listing the operation names in declaration order;
//     with one operation there is none;
//   - "required" lists the parameters required for every operation that have no default;
//   - a requirement bound to operations becomes an allOf entry per operation:
//     {"if":{"properties":{"action":{"const":op}}},"then":{"required":[...]}};
//   - description, enum, format, minimum, maximum, items and default are carried over.
//
// A spec with an InputSchema gets that schema, encoded as compact JSON (object keys sorted),
// instead of a generated one.
//
// The output is compact JSON with keys in a fixed order, so equal declarations give equal bytes.
// Schema panics only for a declaration Register would refuse (a Default or Items value that
// cannot be encoded as JSON).
func Schema(spec Spec) json.RawMessage {
	out, err := schema(spec)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %s: %v", spec.Class, err))
	}
	return out
}

func schema(spec Spec) (json.RawMessage, error) {
	if spec.InputSchema != nil {
		w := &jsonWriter{}
		w.value(spec.InputSchema)
		if w.err != nil {
			return nil, w.err
		}
		return json.RawMessage(w.buf.Bytes()), nil
	}
	params := AllParams(spec)
	disc, hasDisc := Discriminator(spec)

	var required []string
	bound := map[string][]string{} // operation → parameters it requires
	if hasDisc {
		required = append(required, disc)
	}
	for _, p := range params {
		if p.Default != nil {
			continue
		}
		r := p.Required
		switch {
		case r == nil || (!r.Optional && len(r.Operations) == 0):
			required = append(required, p.Name)
		case len(r.Operations) > 0 && !hasDisc:
			// A single operation: binding to it (the only name Register allows) means required.
			required = append(required, p.Name)
		case len(r.Operations) > 0:
			for _, op := range r.Operations {
				bound[op] = append(bound[op], p.Name)
			}
		}
	}

	w := &jsonWriter{}
	w.raw(`{"type":"object","properties":{`)
	first := true
	if hasDisc {
		names := make([]string, len(spec.Operations))
		for i, op := range spec.Operations {
			names[i] = op.Name
		}
		w.key(disc, &first)
		w.raw(`{"type":"string","description":`)
		w.value(discriminatorDescription(spec))
		w.raw(`,"enum":`)
		w.value(names)
		w.raw(`}`)
	}
	for _, p := range params {
		w.key(p.Name, &first)
		writeParam(w, p)
	}
	w.raw(`}`)
	if len(required) > 0 {
		w.raw(`,"required":`)
		w.value(required)
	}
	if len(bound) > 0 {
		w.raw(`,"allOf":[`)
		firstRule := true
		for _, op := range spec.Operations {
			names, ok := bound[op.Name]
			if !ok {
				continue
			}
			if !firstRule {
				w.raw(`,`)
			}
			firstRule = false
			w.raw(`{"if":{"properties":{`)
			w.value(disc)
			w.raw(`:{"const":`)
			w.value(op.Name)
			w.raw(`}}},"then":{"required":`)
			w.value(names)
			w.raw(`}}`)
		}
		w.raw(`]`)
	}
	w.raw(`}`)
	if w.err != nil {
		return nil, w.err
	}
	return json.RawMessage(w.buf.Bytes()), nil
}

// discriminatorDescription tells the model what each operation does: the operation
// descriptions reach it nowhere else.
func discriminatorDescription(spec Spec) string {
	var b bytes.Buffer
	b.WriteString("The operation to perform:")
	for _, op := range spec.Operations {
		b.WriteString("\n- ")
		b.WriteString(op.Name)
		if op.Description != "" {
			b.WriteString(": ")
			b.WriteString(op.Description)
		}
	}
	return b.String()
}

func writeParam(w *jsonWriter, p Param) {
	w.raw(`{"type":`)
	w.value(p.Type)
	if p.Description != "" {
		w.raw(`,"description":`)
		w.value(p.Description)
	}
	if len(p.Enum) > 0 {
		w.raw(`,"enum":`)
		w.value(p.Enum)
	}
	if p.Format != "" {
		w.raw(`,"format":`)
		w.value(p.Format)
	}
	if p.Minimum != nil {
		w.raw(`,"minimum":`)
		w.value(*p.Minimum)
	}
	if p.Maximum != nil {
		w.raw(`,"maximum":`)
		w.value(*p.Maximum)
	}
	if p.Items != nil {
		w.raw(`,"items":`)
		w.value(p.Items)
	}
	if p.Default != nil {
		w.raw(`,"default":`)
		w.value(p.Default)
	}
	w.raw(`}`)
}

// jsonWriter builds JSON whose object keys keep the order they are written in; values are
// encoded by encoding/json without HTML escaping (the text is for a model, not a browser).
type jsonWriter struct {
	buf bytes.Buffer
	err error
}

func (w *jsonWriter) raw(s string) { w.buf.WriteString(s) }

func (w *jsonWriter) key(k string, first *bool) {
	if !*first {
		w.buf.WriteByte(',')
	}
	*first = false
	w.value(k)
	w.buf.WriteByte(':')
}

func (w *jsonWriter) value(v any) {
	if w.err != nil {
		return
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.err = err
		return
	}
	w.buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// OperationFor returns the operation a call's arguments select: the single operation of a tool
// that has one (whatever the arguments say), otherwise the operation named by the discriminator
// argument. It fails with an error wrapping svcerr.ErrInvalid when that argument is missing, not
// a string, or names no declared operation; the message is meant for the model.
func OperationFor(spec Spec, args map[string]any) (string, error) {
	if len(spec.Operations) == 0 {
		return "", svcerr.New(svcerr.ErrInvalid, "tool %s declares no operations", ModelName(spec))
	}
	disc, ok := Discriminator(spec)
	if !ok {
		return spec.Operations[0].Name, nil
	}
	v, present := args[disc]
	if !present || v == nil {
		return "", svcerr.New(svcerr.ErrInvalid, "missing argument %q: one of %s", disc, operationList(spec))
	}
	name, isString := v.(string)
	if !isString {
		return "", svcerr.New(svcerr.ErrInvalid, "argument %q must be a string: one of %s", disc, operationList(spec))
	}
	if _, ok := spec.Operation(name); !ok {
		return "", svcerr.New(svcerr.ErrInvalid, "unknown operation %q: one of %s", name, operationList(spec))
	}
	return name, nil
}

func operationList(spec Spec) string {
	var b bytes.Buffer
	for i, op := range spec.Operations {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(op.Name)
	}
	return b.String()
}
