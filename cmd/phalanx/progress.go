package main

// This file shows how far the runs of one input have got, on stderr, for
// runs long enough to make people wonder: nothing for the first few
// seconds, then one line per policy's share of events done and the elapsed
// time, rewritten in place every second on a terminal, or appended every
// ten seconds otherwise (a log file, CI). The simulator reports through
// sim.Options.Progress from each run's goroutine; a ticker goroutine prints.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressTiming says when progress lines appear.
type progressTiming struct {
	// delay is how long a run must take before any line is printed.
	delay time.Duration
	// every is the time between lines.
	every time.Duration
	// tty rewrites one line with \r instead of appending lines.
	tty bool
}

// defaultTiming suits progress written to w: a terminal gets a line
// rewritten every second, anything else a line every ten seconds.
func defaultTiming(w io.Writer) progressTiming {
	if isTerminal(w) {
		return progressTiming{delay: 3 * time.Second, every: time.Second, tty: true}
	}
	return progressTiming{delay: 10 * time.Second, every: 10 * time.Second}
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress tracks the runs of one input. Its methods may be called from any
// goroutine.
type progress struct {
	out    io.Writer
	timing progressTiming
	input  string
	names  []string
	start  time.Time
	stop   chan struct{}
	done   sync.WaitGroup

	mu          sync.Mutex
	frac        []float64
	finished    []bool
	shown       bool // a line was printed
	lastLineLen int
}

// startProgress starts tracking runs of the named policies over input.
func startProgress(out io.Writer, input string, names []string, timing progressTiming) *progress {
	p := &progress{
		out: out, timing: timing, input: input, names: names,
		start: time.Now(), stop: make(chan struct{}),
		frac: make([]float64, len(names)), finished: make([]bool, len(names)),
	}
	p.done.Add(1)
	go p.loop()
	return p
}

// callback returns the sim.Options.Progress function of run i.
func (p *progress) callback(i int) func(done, total int) {
	return func(done, total int) {
		if total <= 0 {
			return
		}
		p.mu.Lock()
		p.frac[i] = float64(done) / float64(total)
		p.mu.Unlock()
	}
}

// finish marks run i done.
func (p *progress) finish(i int) {
	p.mu.Lock()
	p.finished[i] = true
	p.mu.Unlock()
}

// close stops printing; if anything was printed, it ends with a final line
// saying how long the runs took.
func (p *progress) close() {
	close(p.stop)
	p.done.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.print("\n")
	}
}

func (p *progress) loop() {
	defer p.done.Done()
	select {
	case <-time.After(p.timing.delay):
	case <-p.stop:
		return
	}
	t := time.NewTicker(p.timing.every)
	defer t.Stop()
	for {
		p.mu.Lock()
		p.print("")
		p.mu.Unlock()
		select {
		case <-t.C:
		case <-p.stop:
			return
		}
	}
}

// print writes the current line, then end; p.mu must be held.
func (p *progress) print(end string) {
	var b strings.Builder
	fmt.Fprintf(&b, "simulating %s:", p.input)
	for i, name := range p.names {
		sep := ","
		if i == 0 {
			sep = ""
		}
		if p.finished[i] {
			fmt.Fprintf(&b, "%s %s done", sep, name)
		} else {
			fmt.Fprintf(&b, "%s %s %3.0f%%", sep, name, 100*p.frac[i])
		}
	}
	fmt.Fprintf(&b, "; %s elapsed", time.Since(p.start).Round(time.Second))
	line := b.String()
	if p.timing.tty {
		pad := max(0, p.lastLineLen-len(line))
		fmt.Fprintf(p.out, "\r%s%s%s", line, strings.Repeat(" ", pad), end)
	} else {
		fmt.Fprintln(p.out, line)
	}
	p.lastLineLen = len(line)
	p.shown = true
}
