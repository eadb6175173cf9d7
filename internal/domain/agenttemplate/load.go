package agenttemplate

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Entry is one template file found by LoadDir.
type Entry struct {
	// Path is the file's path inside the scanned file system.
	Path string
	// Template is the parsed template, nil when Report has errors.
	Template *Template
	// Report holds the findings of the file (catalog rules excluded; see LoadDir).
	Report Report
}

// LoadDir reads every template file (*.json, *.yaml, *.yml, at any depth, in lexical order) of
// fsys, as shipped by source ("core" or a plugin slug, which makes NAMESPACE_MISMATCH apply).
// Each file is validated without a catalog, so its report holds the structural findings and
// the warnings that need no catalog; a file with errors is returned with a nil Template rather
// than failing the scan. The error is only for a file system that cannot be read.
func LoadDir(fsys fs.FS, source string) ([]Entry, error) {
	var out []Entry
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		ct := ""
		switch strings.ToLower(path.Ext(p)) {
		case ".json":
			ct = "application/json"
		case ".yaml", ".yml":
			ct = "application/yaml"
		default:
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > MaxSize {
			var c collector
			c.add(CodeParseError, "", "the template cannot be parsed: the file is larger than %d bytes", MaxSize)
			out = append(out, Entry{Path: p, Report: c.report()})
			return nil
		}
		raw, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		t, rep := Parse(Input{Raw: raw, ContentType: ct, Source: source})
		out = append(out, Entry{Path: p, Template: t, Report: rep})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load templates of %s: %w", source, err)
	}
	return out, nil
}
