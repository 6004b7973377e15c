package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

// maxArchiveDepth bounds how deeply chart archives may nest (an archive in
// the charts/ folder of a chart in an archive ...).
const maxArchiveDepth = 8

// errArchiveBudget is an archive set that unpacks past the render budget.
var errArchiveBudget = errors.New("over budget")

// checkArchives unpacks, as a stream that keeps nothing, every chart
// archive among files (charts/*.tgz, and those inside them), and refuses
// the set when together they come to more than budget bytes unpacked.
// Helm's loader allows each archive 100 MiB of its own and holds them all
// at once; measured first, no archive set can take more than the render's
// remaining budget.
func checkArchives(dir string, files []*archive.BufferedFile, budget int64) error {
	left := budget
	for _, f := range files {
		if !isChartArchive(f.Name) {
			continue
		}
		if err := measureArchive(bytes.NewReader(f.Data), &left, 1); err != nil {
			if errors.Is(err, errArchiveBudget) {
				return limitf(dir, "read size", "the chart archives in charts/ unpack to more than the render budget's remaining %d bytes", budget)
			}
			return &ChartError{Chart: dir, Problem: f.Name + ": " + err.Error(), Fix: "vendor the chart again (helm dependency build)"}
		}
	}
	return nil
}

// isChartArchive says whether name, relative to a chart, is an archive
// Helm's loader unpacks as a dependency.
func isChartArchive(name string) bool {
	d, base := path.Split(name)
	return d == "charts/" && (strings.HasSuffix(base, ".tgz") || strings.HasSuffix(base, ".tar.gz"))
}

// measureArchive reads the gzip'd tar r to its end, taking every byte it
// unpacks from *left, and the archives of its charts/ folder in turn.
func measureArchive(r io.Reader, left *int64, depth int) error {
	if depth > maxArchiveDepth {
		return fmt.Errorf("chart archives nest more than %d deep", maxArchiveDepth)
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	defer func() { _ = zr.Close() }()
	counted := &budgetReader{r: zr, left: left}
	tr := tar.NewReader(counted)
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if counted.over {
				return errArchiveBudget
			}
			return err
		}
		// Inside an archive, names carry the chart's own folder first.
		_, rel, _ := strings.Cut(strings.ReplaceAll(hd.Name, "\\", "/"), "/")
		if hd.Typeflag == tar.TypeReg && isChartArchive(path.Clean(rel)) {
			err = measureArchive(tr, left, depth+1)
		} else {
			_, err = io.Copy(io.Discard, tr)
		}
		if counted.over || errors.Is(err, errArchiveBudget) {
			return errArchiveBudget
		}
		if err != nil {
			return err
		}
	}
}

// budgetReader takes every byte read from *left and fails once it is
// spent.
type budgetReader struct {
	r    io.Reader
	left *int64
	over bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if *b.left <= 0 {
		b.over = true
		return 0, errArchiveBudget
	}
	if int64(len(p)) > *b.left {
		p = p[:*b.left]
	}
	n, err := b.r.Read(p)
	*b.left -= int64(n)
	return n, err
}
