// The peer of bench-c/fluent: Debian's fluent-logger-golang 1.9.0 posting
// the same five-field request record to the same local receiver that drains
// (bench-c/drain), synchronously and asynchronously, with EventTime
// (SubSecondPrecision) as vlog sends it.
//
//	bench-c/fluentgo/fluentgo PORT RECORDS    prints one table row per
//	mode: median ns per record over 7 runs, heap allocations and bytes
//	allocated per record, and the records Post refused
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"time"

	"github.com/fluent/fluent-logger-golang/fluent"
)

func once(port, n int, async bool) (ns, allocs, bytes float64, refused int) {
	logger, err := fluent.New(fluent.Config{
		FluentHost:         "127.0.0.1",
		FluentPort:         port,
		Async:              async,
		SubSecondPrecision: true,
	})
	if err != nil {
		panic(err)
	}
	record := func() map[string]interface{} {
		return map[string]interface{}{
			"method": "GET", "path": "/index.html", "status": 200, "bytes": 5120, "duration_us": 1234,
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := logger.Post("bench", record()); err != nil {
			refused++
		}
	}
	// Everything handed to the socket before the clock stops (async:
	// Close waits for the buffer to be written).
	if err := logger.Close(); err != nil {
		panic(err)
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return float64(elapsed.Nanoseconds()) / float64(n),
		float64(after.Mallocs-before.Mallocs) / float64(n),
		float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		refused
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fluentgo PORT RECORDS")
		os.Exit(2)
	}
	port, err1 := strconv.Atoi(os.Args[1])
	n, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "usage: fluentgo PORT RECORDS")
		os.Exit(2)
	}
	for _, async := range []bool{false, true} {
		var ns, allocs, bytes []float64
		refused := 0
		for i := 0; i < 7; i++ {
			t, a, b, r := once(port, n, async)
			ns, allocs, bytes = append(ns, t), append(allocs, a), append(bytes, b)
			refused += r
		}
		mode := "sync"
		if async {
			mode = "async"
		}
		fmt.Printf("| fluent-logger-golang %s | %.0f | - | %.1f | %.0f | %d |\n",
			mode, median(ns), median(allocs), median(bytes), refused)
	}
}
