// Package yamldoc reads exactly one YAML document as a yaml.v3 node tree. The configuration
// file and agent templates walk that tree themselves (rather than decode into Go values) to
// keep line numbers in their error messages and to refuse what JSON cannot hold.
package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Decode returns the root node of the one document in raw, or nil when raw holds no document
// (empty, whitespace or comments only). A second document is an error naming its line.
// yaml.v3 is not supposed to panic; if it does anyway, the panic is an error: bad input must
// not take the process down.
func Decode(raw []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("cannot parse YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, Error(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, Error(err)
		}
		return nil, fmt.Errorf("line %d: only one YAML document is allowed", extra.Line)
	}
	root = &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	return root, nil
}

// Error turns "yaml: line 3: did not find expected key" into "line 3: did not find expected
// key".
func Error(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}
