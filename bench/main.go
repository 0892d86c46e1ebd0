// Command bench measures heed side by side with bare net/http,
// hashicorp/go-retryablehttp, failsafe-go and resty v2, each against its own
// loopback server, and prints one markdown table.
//
//	go run .                                  # every scenario and client
//	go run . -quick                           # under a minute
//	go run . -scenarios deadline,zero-hint -clients retryablehttp,heed
//	go run . -list                            # what can be chosen
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

func main() {
	if kind := os.Getenv(childEnv); kind != "" {
		os.Exit(runChild(kind))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the chosen scenarios and prints the table to
// stdout; progress and errors go to stderr. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scen := fs.String("scenarios", "all", "comma-separated scenarios to run, or all")
	cls := fs.String("clients", "all", "comma-separated clients to compare, or all")
	quick := fs.Bool("quick", false, "finish in under a minute: a 32 MiB upload, short overhead runs")
	verbose := fs.Bool("v", false, "report progress on stderr")
	list := fs.Bool("list", false, "list the scenarios and clients, then exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		for _, s := range scenarios {
			fmt.Fprintf(stdout, "scenario %s\n", s.Name)
		}
		for _, c := range clients {
			extra := ""
			if c.Extra {
				extra = ", only when named"
			}
			fmt.Fprintf(stdout, "client %s (%s%s)\n", c.Name, c.Column, extra)
		}
		return 0
	}
	ss, cs, err := choose(*scen, *cls)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	env := &Env{Quick: *quick, Log: io.Discard, Exe: exe}
	if *verbose {
		env.Log = stderr
	}
	writeTable(stdout, ss, cs, measure(env, ss, cs), env.Quick)
	return 0
}

// measure runs the scenarios that share the machine side by side, then
// those that must run alone, one after another.
func measure(env *Env, ss []*Scenario, cs []Client) map[string]Figures {
	figs := map[string]Figures{}
	var mu sync.Mutex
	one := func(s *Scenario) {
		start := time.Now()
		f := s.Run(env, cs)
		fmt.Fprintf(env.Log, "bench: %s done in %s\n", s.Name, time.Since(start).Round(time.Millisecond))
		mu.Lock()
		figs[s.Name] = f
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, s := range ss {
		if !s.Alone {
			wg.Add(1)
			go func() {
				defer wg.Done()
				one(s)
			}()
		}
	}
	wg.Wait()
	for _, s := range ss {
		if s.Alone {
			one(s)
		}
	}
	return figs
}

// choose resolves the -scenarios and -clients lists, keeping table order.
func choose(scen, cls string) ([]*Scenario, []Client, error) {
	var ss []*Scenario
	if scen == "all" || scen == "" {
		ss = scenarios
	} else {
		want := map[string]bool{}
		for _, n := range strings.Split(scen, ",") {
			n = strings.TrimSpace(n)
			if _, ok := scenarioNamed(n); !ok {
				return nil, nil, fmt.Errorf("no scenario %q (try -list)", n)
			}
			want[n] = true
		}
		for _, s := range scenarios {
			if want[s.Name] {
				ss = append(ss, s)
			}
		}
	}
	var cs []Client
	if cls == "all" || cls == "" {
		for _, c := range clients {
			if !c.Extra {
				cs = append(cs, c)
			}
		}
	} else {
		want := map[string]bool{}
		for _, n := range strings.Split(cls, ",") {
			n = strings.TrimSpace(n)
			if _, ok := clientNamed(n); !ok {
				return nil, nil, fmt.Errorf("no client %q (try -list)", n)
			}
			want[n] = true
		}
		for _, c := range clients {
			if want[c.Name] {
				cs = append(cs, c)
			}
		}
	}
	if len(ss) == 0 || len(cs) == 0 {
		return nil, nil, errors.New("nothing to run")
	}
	return ss, cs, nil
}
