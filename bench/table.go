package main

import (
	"fmt"
	"io"
	"strings"
)

// writeTable prints one markdown table: a row per figure of each scenario
// run, a column for the ideal and for each client. With quick, rows marked
// Full are left out.
func writeTable(w io.Writer, ss []*Scenario, cs []Client, figs map[string]Figures, quick bool) {
	head := []string{"figure", "ideal"}
	for _, c := range cs {
		head = append(head, c.Column)
	}
	line(w, head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	line(w, sep)
	for _, s := range ss {
		f := figs[s.Name]
		for _, r := range s.Rows {
			if r.Full && quick {
				continue
			}
			cells := []string{r.Label, r.Ideal}
			if v := f[r.Key][idealCell]; v != "" { // worked out during the run
				cells[1] = v
			}
			for _, c := range cs {
				v := f[r.Key][c.Name]
				if v == "" {
					v = "—"
				}
				cells = append(cells, v)
			}
			line(w, cells)
		}
	}
}

func line(w io.Writer, cells []string) {
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "|", "/")
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}
