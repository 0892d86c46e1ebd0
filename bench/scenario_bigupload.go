package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// big-upload: a 256 MiB PUT streamed from an *os.File, answered 503 once
// and then 200. Each client runs in a child process of its own so that its
// peak resident memory can be read; a client that keeps the file in memory
// to replay it shows here. With -quick the file is 32 MiB and each child
// is stopped after 10 s instead of 2 minutes.
func init() {
	register(&Scenario{
		Name:  "big-upload",
		Order: 70,
		Alone: true,
		Rows: []Row{
			{Key: "rss", Label: "big-upload: peak RSS, 256 MiB PUT from a file", Ideal: "flat (< 64 MiB)"},
		},
		Run: runBigUpload,
	})
}

func runBigUpload(env *Env, cs []Client) Figures {
	f := Figures{}
	size, limit := int64(256<<20), 2*time.Minute
	if env.Quick {
		size, limit = 32<<20, 10*time.Second
	}
	dir, err := os.MkdirTemp("", "heed-bench-")
	if err != nil {
		fmt.Fprintln(env.Log, "bench: big-upload:", err)
		return f
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "upload.bin")
	file, err := os.Create(path)
	if err == nil {
		err = file.Truncate(size) // sparse: no disk written, reads as zeros
		file.Close()
	}
	if err != nil {
		fmt.Fprintln(env.Log, "bench: big-upload:", err)
		return f
	}
	for _, c := range cs {
		s := newServer(func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		start := time.Now()
		res, peak, err := runUpload(env, c.Name, s.URL+"/v1/uploads/1", path, limit)
		s.Close()
		fmt.Fprintf(env.Log, "bench: big-upload %s: %s, %d requests\n", c.Name, time.Since(start).Round(time.Millisecond), len(s.got()))
		if err != nil {
			f.set("rss", c.Name, "failed: "+shorten(err.Error()))
			continue
		}
		cell := mib(peak)
		h := s.got()
		whole := 0
		for _, x := range h {
			if x.Size == size {
				whole++
			}
		}
		switch {
		case res.Killed:
			cell += fmt.Sprintf(", still retrying after %s", limit)
		case res.Err != "":
			cell += ", then error: " + shorten(errLeaf(res.Err))
		case whole < len(h):
			cell += fmt.Sprintf(" (%d of %d bodies whole)", whole, len(h))
		}
		if size != 256<<20 {
			cell += fmt.Sprintf(" [%d MiB]", size>>20)
		}
		f.set("rss", c.Name, cell)
	}
	return f
}
