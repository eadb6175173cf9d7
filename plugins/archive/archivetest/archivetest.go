// Package archivetest builds .tar.gz and .zip archives for tests of the plugin archive unpacker
// and of the installer, including archives no honest tool would write (links, `..` names,
// duplicates).
package archivetest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"strings"
)

// Entry is one archive member. A name ending in "/" is a directory unless Type says otherwise.
type Entry struct {
	Name string
	Body string
	// Type is a tar type flag (tar.TypeReg, tar.TypeSymlink, ...); 0 means a regular file, or a
	// directory when Name ends in "/". Zip archives honour TypeSymlink, TypeDir and TypeFifo.
	Type byte
	// Link is the target of a link entry.
	Link string
	// Mode holds permission bits; 0 means 0644 (0755 for directories).
	Mode int64
	// Size, when not 0, overrides the size written in a tar header.
	Size int64
}

func (e Entry) typ() byte {
	if e.Type != 0 {
		return e.Type
	}
	if strings.HasSuffix(e.Name, "/") {
		return tar.TypeDir
	}
	return tar.TypeReg
}

// TarGz returns a gzip-compressed tar archive of entries, in order. It panics on a writer error
// (only a lying Size can cause one, and then the archive is returned truncated on purpose).
func TarGz(entries ...Entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
			if e.typ() == tar.TypeDir {
				mode = 0o755
			}
		}
		h := &tar.Header{Name: e.Name, Typeflag: e.typ(), Linkname: e.Link, Mode: mode, Format: tar.FormatPAX}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if e.Size != 0 {
			h.Size = e.Size
		}
		if err := tw.WriteHeader(h); err != nil {
			panic(err)
		}
		if h.Typeflag == tar.TypeReg && e.Body != "" {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				if e.Size != 0 {
					break
				}
				panic(err)
			}
		}
	}
	_ = tw.Close()
	if err := gz.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Zip returns a zip archive of entries, in order, deflated.
func Zip(entries ...Entry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		perm := fs.FileMode(e.Mode)
		if perm == 0 {
			perm = 0o644
		}
		switch e.typ() {
		case tar.TypeDir:
			h.SetMode(fs.ModeDir | 0o755)
			h.Method = zip.Store
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
		case tar.TypeFifo:
			h.SetMode(fs.ModeNamedPipe | 0o644)
		default:
			h.SetMode(perm)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			panic(err)
		}
		body := e.Body
		if e.typ() == tar.TypeSymlink {
			body = e.Link
		}
		if _, err := w.Write([]byte(body)); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
