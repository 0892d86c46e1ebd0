package main

import (
	"bytes"
	"io"
	"sync"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// bufPool holds the buffers responses are read into, as an API client
// reads a JSON body before decoding it.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readAll reads r to the end into a pooled buffer and reports how much it
// read.
func readAll(r io.Reader) (int, error) {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	n, err := b.ReadFrom(r)
	bufPool.Put(b)
	return int(n), err
}
