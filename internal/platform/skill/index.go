package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// CoreSource is the source name of the shipped skills.
const CoreSource = "core"

// Provider is one source of skills: a file system whose top-level folders are skill folders.
// Plugin providers should pass an os.Root's FS (os.OpenRoot(dir).FS()) so no path can leave the
// directory; symbolic links are skipped by the index either way.
type Provider struct {
	// Source names the provider: CoreSource, or the plugin's slug.
	Source string
	FS     fs.FS
}

// Problem is a folder of a provider that did not become a skill: unreadable, invalid, or
// shadowed by a skill of the same name from an earlier provider.
type Problem struct {
	Source string
	Folder string // empty when the provider's root itself failed
	Err    error
}

func (p Problem) Error() string {
	if p.Folder == "" {
		return fmt.Sprintf("skill provider %s: %v", p.Source, p.Err)
	}
	return fmt.Sprintf("skill provider %s, folder %s: %v", p.Source, p.Folder, p.Err)
}

func (p Problem) Unwrap() error { return p.Err }

// Index is the set of available skills, read from ordered providers. It is safe for concurrent
// use: Reload swaps in the skills of new providers (a plugin installed or removed) at once, and
// every reader sees either the old set or the new one.
type Index struct {
	cur atomic.Pointer[snapshot]
}

// snapshot is one reading of the providers.
type snapshot struct {
	skills   map[string]entry
	names    []string // sorted
	problems []Problem
}

type entry struct {
	skill Skill
	fsys  fs.FS // the provider's FS; the skill lives in the folder named skill.Name
}

// NewIndex reads the providers in order. The first provider to offer a name wins: list the core
// provider first so a plugin cannot shadow a shipped skill. Folders that fail — no SKILL.md, an
// invalid one, a name taken by an earlier provider (ErrConflict) — are skipped and returned as
// problems (also kept in Problems); hidden folders (".", "_") and plain files at the root are
// ignored silently.
func NewIndex(providers ...Provider) (*Index, []Problem) {
	x := &Index{}
	return x, x.Reload(providers...)
}

// Reload reads the providers again (with the rules of NewIndex) and replaces the index's skills
// with theirs, returning the problems found.
func (x *Index) Reload(providers ...Provider) []Problem {
	c := &snapshot{skills: map[string]entry{}}
	for _, p := range providers {
		c.load(p)
	}
	for name := range c.skills {
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	x.cur.Store(c)
	return append([]Problem(nil), c.problems...)
}

func (x *snapshot) load(p Provider) {
	if p.FS == nil {
		x.problems = append(x.problems, Problem{Source: p.Source, Err: errors.New("no file system")})
		return
	}
	entries, err := fs.ReadDir(p.FS, ".")
	if err != nil {
		x.problems = append(x.problems, Problem{Source: p.Source, Err: err})
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		s, err := readSkill(p.FS, name)
		if err != nil {
			x.problems = append(x.problems, Problem{Source: p.Source, Folder: name, Err: err})
			continue
		}
		if prev, taken := x.skills[name]; taken {
			x.problems = append(x.problems, Problem{Source: p.Source, Folder: name, Err: svcerr.New(svcerr.ErrConflict,
				"skill %q is already provided by %s; skipped", name, prev.skill.Source)})
			continue
		}
		s.Source = p.Source
		x.skills[name] = entry{skill: s, fsys: p.FS}
	}
}

func readSkill(fsys fs.FS, folder string) (Skill, error) {
	if !ValidName(folder) {
		return Skill{}, svcerr.New(svcerr.ErrInvalid, "folder name %q is not a valid skill name", folder)
	}
	entries, err := fs.ReadDir(fsys, folder)
	if err != nil {
		return Skill{}, err
	}
	var manifest fs.DirEntry
	for _, e := range entries {
		if e.Name() == ManifestName {
			manifest = e
		}
	}
	if manifest == nil || !manifest.Type().IsRegular() {
		return Skill{}, svcerr.New(svcerr.ErrInvalid, "no %s file in the folder", ManifestName)
	}
	data, err := readLimited(fsys, folder+"/"+ManifestName, MaxSkillFileBytes)
	if err != nil {
		return Skill{}, err
	}
	return Parse(folder, data)
}

// readLimited reads a file, refusing (ErrTooLarge) one longer than limit without reading it all.
func readLimited(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, svcerr.New(svcerr.ErrTooLarge, "%s is larger than %d bytes", path.Base(name), limit)
	}
	return data, nil
}

// Problems returns the folders that were skipped when the index was built, in provider order.
func (x *Index) Problems() []Problem {
	c := x.cur.Load()
	return append([]Problem(nil), c.problems...)
}

// Get returns the skill called name.
func (x *Index) Get(name string) (Skill, bool) {
	c := x.cur.Load()
	e, ok := c.skills[name]
	if !ok {
		return Skill{}, false
	}
	s := e.skill
	s.AllowedTools = append([]string(nil), s.AllowedTools...)
	if s.Metadata != nil {
		m := make(map[string]string, len(s.Metadata))
		for k, v := range s.Metadata {
			m[k] = v
		}
		s.Metadata = m
	}
	return s, true
}

// Exists reports whether a skill called name is available.
func (x *Index) Exists(name string) bool {
	c := x.cur.Load()
	_, ok := c.skills[name]
	return ok
}

// All returns every skill ordered by name.
func (x *Index) All() []Skill {
	c := x.cur.Load()
	out := make([]Skill, 0, len(c.names))
	for _, n := range c.names {
		s, _ := x.Get(n)
		out = append(out, s)
	}
	return out
}

// Body returns the instructions of the skill called name. It fails with svcerr.ErrNotFound for
// an unknown name.
func (x *Index) Body(name string) (string, error) {
	c := x.cur.Load()
	e, ok := c.skills[name]
	if !ok {
		return "", svcerr.New(svcerr.ErrNotFound, "no skill %q", name)
	}
	return e.skill.Body, nil
}

// Files lists the files that come with the skill called name, as slash-separated paths relative
// to its folder, in lexical order: regular files only (SKILL.md itself, hidden entries and
// symbolic links are left out), at most MaxFiles. It fails with svcerr.ErrNotFound for an unknown
// name, or with the file system's error when the folder cannot be read.
func (x *Index) Files(name string) ([]string, error) {
	c := x.cur.Load()
	e, ok := c.skills[name]
	if !ok {
		return nil, svcerr.New(svcerr.ErrNotFound, "no skill %q", name)
	}
	out := []string{}
	err := fs.WalkDir(e.fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == name {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel := strings.TrimPrefix(p, name+"/")
		if rel == ManifestName {
			return nil
		}
		out = append(out, rel)
		if len(out) == MaxFiles {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list files of skill %s: %w", name, err)
	}
	sort.Strings(out)
	return out, nil
}

// ReadFile returns a file of the skill called name, by a path Files lists (anything else, such as
// a path with "..", is refused, so nothing outside the skill's folder can be read). It fails with
// svcerr.ErrNotFound for an unknown skill or a path Files does not list, svcerr.ErrInvalid for a
// malformed path and svcerr.ErrTooLarge for a file over MaxFileBytes.
func (x *Index) ReadFile(name, rel string) ([]byte, error) {
	c := x.cur.Load()
	e, ok := c.skills[name]
	if !ok {
		return nil, svcerr.New(svcerr.ErrNotFound, "no skill %q", name)
	}
	if !fs.ValidPath(rel) || rel == "." || strings.Contains(rel, `\`) {
		return nil, svcerr.New(svcerr.ErrInvalid, "invalid file path %q (a relative path inside the skill, without ..)", rel)
	}
	files, err := x.Files(name)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(files, rel) {
		return nil, svcerr.New(svcerr.ErrNotFound, "skill %s has no file %q", name, rel)
	}
	return readLimited(e.fsys, name+"/"+rel, MaxFileBytes)
}
