package main

import (
	"io"
	"sort"
	"sync"
)

// Scenario is a group of rows of the table, measured against a loopback
// server of its own. Register one from an init function with register;
// herd scenarios and any later ones plug in the same way.
type Scenario struct {
	Name  string // what -scenarios selects
	Order int    // place in the table: rows of lower Order come first
	Rows  []Row
	// Alone scenarios run one at a time after the others, because they
	// measure time per operation or load the machine; the rest run side by
	// side.
	Alone bool
	// Run measures every client given and returns each row's cells.
	Run func(env *Env, cs []Client) Figures
}

// Row is one line of the table.
type Row struct {
	Key   string // unique within its scenario
	Label string // the table's first column
	Ideal string // the ideal column
	// Full rows are measured in a full run only; -quick leaves them out of
	// the table.
	Full bool
}

// Figures holds cells: row key → client name → text.
type Figures map[string]map[string]string

// set records one cell.
func (f Figures) set(row, client, text string) {
	if f[row] == nil {
		f[row] = map[string]string{}
	}
	f[row][client] = text
}

// Env is what a scenario may use besides its clients.
type Env struct {
	Quick bool
	Log   io.Writer // progress, never the table
	Exe   string    // this program, to start child processes
}

var scenarios []*Scenario

// register adds a scenario to the registry.
func register(s *Scenario) {
	scenarios = append(scenarios, s)
	sort.SliceStable(scenarios, func(i, j int) bool { return scenarios[i].Order < scenarios[j].Order })
}

// scenarioNamed returns the registered scenario called name.
func scenarioNamed(name string) (*Scenario, bool) {
	for _, s := range scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// eachClient runs measure for every client at once, each with a fresh
// Doer that is closed afterwards, and gathers the cells.
func eachClient(cs []Client, measure func(c Client, d Doer, f Figures)) Figures {
	out := Figures{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := c.New(nil)
			defer d.Close()
			f := Figures{}
			measure(c, d, f)
			mu.Lock()
			defer mu.Unlock()
			for row, cells := range f {
				for name, text := range cells {
					out.set(row, name, text)
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// figMu guards cells set from several goroutines of one client.
var figMu sync.Mutex

// setLocked records one cell from a goroutine that shares f.
func (f Figures) setLocked(row, client, text string) {
	figMu.Lock()
	defer figMu.Unlock()
	f.set(row, client, text)
}
