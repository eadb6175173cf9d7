package toolconfig

import (
	"encoding/json"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// CheckClass applies the shape of a tool class (printable ASCII, 1 to store.MaxToolClassLen
// bytes, the key column). Errors: ErrInvalid.
func CheckClass(class string) error {
	return fieldcheck.ASCII("tool class", class, 1, store.MaxToolClassLen)
}

// CheckOperation applies the shape of an operation name (printable ASCII, 1 to
// store.MaxToolOperationLen bytes). Errors: ErrInvalid.
func CheckOperation(op string) error {
	return fieldcheck.ASCII("operation", op, 1, store.MaxToolOperationLen)
}

// CheckValues applies the shape of one layer's settings: keys printable ASCII of 1 to
// store.MaxToolSettingKeyLen bytes, each value encodable as JSON in at most
// store.MaxToolSettingValueLen bytes (nil values are unset and not checked). Errors: ErrInvalid
// naming the key.
func CheckValues(values map[string]any) error {
	for k, v := range values {
		if err := fieldcheck.ASCII("setting key", k, 1, store.MaxToolSettingKeyLen); err != nil {
			return err
		}
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fieldcheck.Invalidf("setting %q cannot be encoded as JSON", k)
		}
		if len(b) > store.MaxToolSettingValueLen {
			return fieldcheck.Invalidf("setting %q must encode to at most %d bytes of JSON", k, store.MaxToolSettingValueLen)
		}
	}
	return nil
}

// CheckImportedTools applies the tool rules to the tool records of an agent import
// (store.ImportAgent): each class well formed and given once, operation names well formed,
// settings as CheckValues. The template import calls it before the store, so a refused import
// writes nothing. Errors: ErrInvalid naming the tool.
func CheckImportedTools(tools []store.ImportedTool) error {
	seen := map[string]bool{}
	for _, t := range tools {
		if err := CheckClass(t.ToolClass); err != nil {
			return err
		}
		if seen[t.ToolClass] {
			return fieldcheck.Invalidf("tool %s is given twice", t.ToolClass)
		}
		seen[t.ToolClass] = true
		for op := range t.Operations {
			if err := CheckOperation(op); err != nil {
				return err
			}
		}
		if err := CheckValues(t.Settings); err != nil {
			msg, _, _ := svcerr.Public(err)
			return fieldcheck.Invalidf("tool %s: %s", t.ToolClass, msg)
		}
	}
	return nil
}
