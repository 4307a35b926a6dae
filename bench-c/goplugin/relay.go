// The peer of bench-c/relay: go-plugin's own stderr relay (Client.logStderr)
// on the same lines, through a pipe the same two ways (-pipe: each line
// written into it and read back before it is relayed; -stream: a goroutine
// writing 64 KiB at a time while the relay reads), as Debian's go-plugin
// 1.0.1 ships it and with the later change (see build.sh). Its logger is hclog's, at off
// (above error), error (the debug lines filtered out) and trace (recorded),
// writing to io.Discard.
//
//	bench-c/goplugin/relay LINES    prints one table row per case: the
//	median ns per line over 7 runs, and heap allocations per line
package main

import (
	"fmt"
	"io"
	"io/ioutil"
	"os"
	"runtime"
	"sort"
	"strconv"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	v101 "github.com/hashicorp/go-plugin/vlogbench101"
	changed "github.com/hashicorp/go-plugin/vlogbenchchanged"
)

// The lines of bench-c/relay.c, byte for byte.
const hclogLine = `{"@level":"debug","@timestamp":"2006-01-02T15:04:05.000000Z","@message":"hello",` +
	`"extra":"hi","numbers":[1,2,3]}` + "\n"

const mix = `{"@level":"debug","@message":"tick","n":1}` + "\n" +
	"[DEBUG] plugin: waiting for RPC address\n" +
	"2026-11-30 13:45:12.345+0000: 4242: debug : qemu.monitor : qemuMonitorSend:123 : sent 12 bytes\n" +
	"debug: connection from 192.0.2.7\n"

// feeder writes its text into the pipe and reads it back on each Read, as
// many times as asked: one write and one read per call, as in bench-c/relay.
type feeder struct {
	w, r *os.File
	text []byte
	left int
}

func (f *feeder) Read(p []byte) (int, error) {
	if f.left == 0 {
		return 0, io.EOF
	}
	f.left--
	if _, err := f.w.Write(f.text); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

// stream writes n copies of text into w in 64 KiB writes, as a child whose
// output stdio buffers does, then closes it.
func stream(w *os.File, text []byte, n int) {
	per := 65536 / len(text)
	chunk := make([]byte, 0, per*len(text))
	for i := 0; i < per; i++ {
		chunk = append(chunk, text...)
	}
	for n > 0 {
		now := per
		if n < now {
			now = n
		}
		if _, err := w.Write(chunk[:now*len(text)]); err != nil {
			panic(err)
		}
		n -= now
	}
	w.Close()
}

type relay func(hclog.Logger, io.Reader)

// once relays n calls' worth of text, through the pipe line by line or
// streamed; returns ns and allocations per call.
func once(run relay, level hclog.Level, text string, n int, streamed bool) (float64, float64) {
	logger := hclog.New(&hclog.LoggerOptions{Level: level, Output: ioutil.Discard})
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	defer r.Close()
	f := &feeder{w: w, r: r, text: []byte(text), left: n}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	if streamed {
		go stream(w, []byte(text), n)
		run(logger, r)
	} else {
		run(logger, f)
		w.Close()
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if !streamed && f.left != 0 {
		panic("the relay stopped early")
	}
	return float64(elapsed.Nanoseconds()) / float64(n), float64(after.Mallocs-before.Mallocs) / float64(n)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func main() {
	n := 20000
	if len(os.Args) > 1 {
		var err error
		if n, err = strconv.Atoi(os.Args[1]); err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "usage: relay [LINES]")
			os.Exit(2)
		}
	}
	relays := []struct {
		name string
		run  relay
	}{{"go-plugin 1.0.1", v101.BenchRelay}, {"go-plugin changed", changed.BenchRelay}}
	levels := []struct {
		name  string
		level hclog.Level
	}{{"off", hclog.Error + 1}, {"filtered", hclog.Error}, {"recorded", hclog.Trace}}
	lines := []struct {
		name    string
		text    string
		perCall int
	}{{"hclog line (112 bytes)", hclogLine, 1}, {"mix of 4 forms", mix, 4}}
	for _, r := range relays {
		for _, l := range levels {
			for _, scheme := range []string{"pipe", "stream"} {
				for _, line := range lines {
					var ns, allocs []float64
					for i := 0; i < 7; i++ {
						t, a := once(r.run, l.level, line.text, n, scheme == "stream")
						ns = append(ns, t/float64(line.perCall))
						allocs = append(allocs, a/float64(line.perCall))
					}
					fmt.Printf("| %s %s-%s | %s | %.0f | | %.1f |\n",
						r.name, l.name, scheme, line.name, median(ns), median(allocs))
				}
			}
		}
	}
}
