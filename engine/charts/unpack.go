package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// maxFiles bounds how many entries a chart archive may hold.
const maxFiles = 5000

// headerAllowance is what the tar stream may hold beyond its files'
// content: headers and padding of maxFiles entries, long names. Past
// budget+headerAllowance bytes Unpack stops reading (an io.LimitedReader,
// whose N is then 0), so headers cannot make a gzip bomb either.
const headerAllowance = maxFiles*2048 + 1<<20

// errUnpackBudget is an archive that unpacks past its budget.
var errUnpackBudget = errors.New("over budget")

// Unpack reads a chart archive into its files, relative to the chart's folder (the archive's single top folder), within budget bytes unpacked; it returns the chart's name (the top folder).
//
// Only regular files and folders are accepted: no absolute path, no "..",
// no link or device, at most 5,000 entries, and everything under one top
// folder. budget bounds the files' content together; the tar stream around
// them may add headerAllowance.
func Unpack(archive []byte, budget int64) (name string, files map[string][]byte, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return "", nil, fmt.Errorf("chart archive: not a gzip'd tar (%v): package the chart with helm package", err)
	}
	defer zr.Close()
	left := budget
	stream := &io.LimitedReader{R: zr, N: budget + headerAllowance}
	tr := tar.NewReader(stream)
	files = map[string][]byte{}
	entries := 0
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if stream.N <= 0 {
				return "", nil, overBudget(budget)
			}
			return "", nil, fmt.Errorf("chart archive: unreadable (%v): package the chart again with helm package", err)
		}
		if hd.Typeflag == tar.TypeXGlobalHeader {
			continue // metadata of the archive (git archive writes one), no file
		}
		if entries++; entries > maxFiles {
			return "", nil, fmt.Errorf("chart archive: more than %d files: a chart that large is not rendered; vendor what it needs into Git", maxFiles)
		}
		top, rel, err := entryPath(hd.Name)
		if err != nil {
			return "", nil, err
		}
		if name == "" {
			name = top
		} else if top != name {
			return "", nil, fmt.Errorf("chart archive: two top folders, %q and %q: a chart archive holds one chart folder; package it with helm package", name, top)
		}
		switch hd.Typeflag {
		case tar.TypeDir:
			if hd.Size != 0 {
				return "", nil, fmt.Errorf("chart archive: folder %q claims %d bytes of content: package the chart again with helm package", hd.Name, hd.Size)
			}
			continue
		case tar.TypeReg:
		default:
			return "", nil, fmt.Errorf("chart archive: %q is a %s, and only regular files and folders are accepted: remove it from the chart", hd.Name, kind(hd.Typeflag))
		}
		if rel == "" {
			return "", nil, fmt.Errorf("chart archive: %q is a file where the chart's folder should be: package the chart with helm package", hd.Name)
		}
		if _, dup := files[rel]; dup {
			return "", nil, fmt.Errorf("chart archive: %q appears twice: package the chart again with helm package", hd.Name)
		}
		if hd.Size > left {
			return "", nil, overBudget(budget)
		}
		data, err := io.ReadAll(tr)
		left -= int64(len(data))
		if err != nil {
			if stream.N <= 0 {
				return "", nil, overBudget(budget)
			}
			return "", nil, fmt.Errorf("chart archive: %q unreadable (%v): package the chart again with helm package", hd.Name, err)
		}
		files[rel] = data
	}
	if name == "" {
		return "", nil, errors.New("chart archive: empty: package the chart with helm package")
	}
	return name, files, nil
}

// entryPath splits an archive entry's name into its top folder and the
// path below it, refusing an absolute path and "..".
func entryPath(raw string) (top, rel string, err error) {
	n := strings.ReplaceAll(raw, "\\", "/")
	if strings.HasPrefix(n, "/") || len(n) > 1 && n[1] == ':' {
		return "", "", fmt.Errorf("chart archive: %q is an absolute path: a chart archive holds paths below its chart folder", raw)
	}
	for _, seg := range strings.Split(n, "/") {
		if seg == ".." {
			return "", "", fmt.Errorf("chart archive: %q climbs out of the chart with \"..\": remove it from the archive", raw)
		}
	}
	n = strings.TrimPrefix(path.Clean(n), "./")
	if n == "." || n == "" {
		return "", "", fmt.Errorf("chart archive: entry %q has no name: package the chart again with helm package", raw)
	}
	top, rel, _ = strings.Cut(n, "/")
	return top, rel, nil
}

// kind names a tar entry type for messages.
func kind(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}

// overBudget is the error of an archive that unpacks past budget.
func overBudget(budget int64) error {
	return fmt.Errorf("chart archive: unpacks to more than %d bytes: %w; a chart that large is not rendered, vendor what it needs into Git", budget, errUnpackBudget)
}
