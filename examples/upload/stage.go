package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Generator makes a job's image. It is expensive (a model run), so the
// uploader calls it at most once per job: its output is staged on disk
// until the upload is confirmed.
type Generator func(ctx context.Context, tenant, job string) ([]byte, error)

// staging is a directory of generated images waiting to be delivered, one
// file per job: {dir}/{tenant}/{job}.png. Ids are validated before they
// reach it.
type staging struct{ dir string }

// staged is an image on disk, open for reading, with its size and
// SHA-256 (base64, as S3's x-amz-checksum-sha256 wants it).
type staged struct {
	*os.File
	size   int64
	sha256 string
}

func (s staging) path(tenant, job string) string {
	return filepath.Join(s.dir, tenant, job+".png")
}

// open returns the job's staged image, generating and staging it first if
// there is none. The generator runs only when no staged file exists.
func (s staging) open(ctx context.Context, tenant, job string, gen Generator) (*staged, error) {
	p := s.path(tenant, job)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		img, gerr := gen(ctx, tenant, job)
		if gerr != nil {
			return nil, fmt.Errorf("generating %s/%s: %w", tenant, job, gerr)
		}
		if err := writeAtomic(p, img); err != nil {
			return nil, err
		}
		f, err = os.Open(p)
	}
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &staged{File: f, size: n, sha256: base64.StdEncoding.EncodeToString(h.Sum(nil))}, nil
}

// done removes a delivered job's staged image.
func (s staging) done(tenant, job string) error {
	err := os.Remove(s.path(tenant, job))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// writeAtomic writes data to path through a temporary file and a rename, so
// a crash never leaves a partial image that would be uploaded later.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".staging-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
