package plugin

import (
	"io"
	"io/ioutil"
	"os/exec"

	hclog "github.com/hashicorp/go-hclog"
)

// BenchRelay runs the client's stderr relay (logStderr) on r until it
// ends, with the logger l, as a Client does on its plugin's stderr.
func BenchRelay(l hclog.Logger, r io.Reader) {
	c := &Client{
		logger: l,
		config: &ClientConfig{Cmd: exec.Command("child"), Stderr: ioutil.Discard},
	}
	c.clientWaitGroup.Add(1)
	c.stderrWaitGroup.Add(1)
	c.logStderr(r)
}

// enabled says whether l logs at level (a line of no level is logged at
// debug); the changed copy's client.go asks it.
func enabled(l hclog.Logger, level hclog.Level) bool {
	switch level {
	case hclog.Trace:
		return l.IsTrace()
	case hclog.Info:
		return l.IsInfo()
	case hclog.Warn:
		return l.IsWarn()
	case hclog.Error:
		return l.IsError()
	default:
		return l.IsDebug()
	}
}
