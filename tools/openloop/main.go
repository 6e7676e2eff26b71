// Command shoal-openloop offers one open-loop load step to a Shoal ingress and prints what it
// measured as one JSON object. The cluster-overhead bench (tools/bench/overhead.ts) runs it
// once per step, so the generator is a compiled process whose own CPU is measured and
// reported beside the cluster's, not a Node process competing with ingress for the same event
// loop.
//
// Requests leave at Poisson arrival times fixed by -seed, whether or not earlier ones have
// been answered; latency counts from the scheduled time, so a late send is charged to the
// server side it waited for (no coordinated omission). Bodies are prepared by the caller
// (-bodies: a file of u32-little-endian-length-prefixed bodies, sent round-robin), which
// keeps this tool protocol-agnostic: -protocol http posts them with -content-type; -protocol
// grpc sends them as the already-encoded protobuf of a unary call to -path.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	protocol    string
	url         string
	path        string
	contentType string
	bodies      string
	rate        float64
	seconds     float64
	warmup      float64
	conns       int
	timeout     time.Duration
	seed        uint64
	// headers go with every request: HTTP headers, or gRPC metadata (an API key).
	headers headerList
}

// headerList is a repeatable -header "name: value" flag.
type headerList [][2]string

func (h *headerList) String() string { return fmt.Sprint(*h) }

func (h *headerList) Set(v string) error {
	name, value, found := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if !found || name == "" || strings.ContainsAny(name, " \r\n") || strings.ContainsAny(value, "\r\n") {
		return fmt.Errorf("want name: value, not %q", v)
	}
	*h = append(*h, [2]string{strings.ToLower(name), strings.TrimSpace(value)})
	return nil
}

// result is the step's summary; field names follow the bench's result.json (snake_case).
type result struct {
	OfferedRps  float64 `json:"offered_rps"`
	Sent        int     `json:"sent"`
	SentRps     float64 `json:"sent_rps"`
	Answered    int     `json:"answered"`
	AchievedRps float64 `json:"achieved_rps"`
	Failed      int     `json:"failed"`
	// FailedBy counts failures by what went wrong (an HTTP status, a gRPC code, "timeout").
	FailedBy map[string]int `json:"failed_by"`
	// RetryAfter counts refusals that said when to come back (an HTTP Retry-After header).
	RetryAfter int       `json:"retry_after"`
	LatencyMs  quantiles `json:"latency_ms"`
	// SendLagMs is how late requests left against their schedule: small when the generator
	// keeps up with the rate it offers.
	SendLagMs quantiles `json:"send_lag_ms"`
	// CPUUs is this process's user and system CPU over the measured window, µs.
	CPUUs   int64   `json:"cpu_us"`
	WindowS float64 `json:"window_s"`
	// TotalAnswered and TotalCPUUs cover the warm-up too: the bench charges the cluster's CPU
	// over the whole step, so it divides by every answer of the step.
	TotalAnswered int    `json:"total_answered"`
	TotalCPUUs    int64  `json:"total_cpu_us"`
	FirstError    string `json:"first_error,omitempty"`
}

type quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// sender sends one body and returns nil on success, or an error whose key() names the failure.
type sender interface {
	send(body []byte) error
}

type failure struct {
	key        string
	detail     string
	retryAfter bool
}

func (f *failure) Error() string { return f.key + ": " + f.detail }

func main() {
	var o options
	flag.StringVar(&o.protocol, "protocol", "http", "http or grpc")
	flag.StringVar(&o.url, "url", "", "ingress base URL, e.g. http://127.0.0.1:8080")
	flag.StringVar(&o.path, "path", "/v1/embeddings", "HTTP path, or the gRPC method's full path")
	flag.StringVar(&o.contentType, "content-type", "application/json", "HTTP content type")
	flag.StringVar(&o.bodies, "bodies", "", "file of u32-LE-length-prefixed request bodies")
	flag.Float64Var(&o.rate, "rate", 100, "offered requests per second")
	flag.Float64Var(&o.seconds, "seconds", 10, "measured window, s")
	flag.Float64Var(&o.warmup, "warmup", 2, "unmeasured lead-in at the same rate, s")
	flag.IntVar(&o.conns, "conns", 64, "HTTP connections (http), or HTTP/2 connections (grpc)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "per-request timeout")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the arrival times")
	flag.Var(&o.headers, "header", "a header (gRPC: metadata) sent with every request, \"name: value\"; repeatable")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "shoal-openloop:", err)
		flag.Usage()
		os.Exit(2)
	}
	bodies, err := readBodies(o.bodies)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shoal-openloop:", err)
		os.Exit(2)
	}
	var s sender
	if o.protocol == "grpc" {
		s, err = newGrpcSender(o)
	} else {
		s, err = newHTTPSender(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shoal-openloop:", err)
		os.Exit(1)
	}
	r := run(o, s, bodies)
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		os.Exit(1)
	}
}

func (o *options) validate() error {
	switch {
	case o.protocol != "http" && o.protocol != "grpc":
		return fmt.Errorf("-protocol must be http or grpc, not %q", o.protocol)
	case o.url == "":
		return fmt.Errorf("-url is required")
	case o.bodies == "":
		return fmt.Errorf("-bodies is required")
	case !(o.rate > 0) || !(o.seconds > 0) || o.warmup < 0:
		return fmt.Errorf("-rate and -seconds must be positive, -warmup not negative")
	case o.conns < 1:
		return fmt.Errorf("-conns must be at least 1")
	}
	return nil
}

func readBodies(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var bodies [][]byte
	for len(data) > 0 {
		if len(data) < 4 {
			return nil, fmt.Errorf("%s: truncated length prefix", path)
		}
		n := int(binary.LittleEndian.Uint32(data))
		if len(data) < 4+n {
			return nil, fmt.Errorf("%s: body of %d bytes runs past the end", path, n)
		}
		bodies = append(bodies, data[4:4+n])
		data = data[4+n:]
	}
	if len(bodies) == 0 {
		return nil, fmt.Errorf("%s: no bodies", path)
	}
	return bodies, nil
}

type outcome struct {
	scheduled time.Duration // since start
	sent      time.Duration
	done      time.Duration
	err       error
}

// run offers the step: warm-up, then the measured window; it waits for every answer (or its
// timeout) before summarising.
func run(o options, s sender, bodies [][]byte) result {
	warm := time.Duration(o.warmup * float64(time.Second))
	window := time.Duration(o.seconds * float64(time.Second))
	arrivals := poissonArrivals(o.rate, warm+window, o.seed)
	outcomes := make([]outcome, len(arrivals))
	var wg sync.WaitGroup
	start := time.Now()
	var cpuAtWindow, cpuAtEnd int64
	// Every goroutine writes only its own slot of outcomes, so no lock is needed.
	windowMarked := false
	for i, at := range arrivals {
		if !windowMarked && at >= warm {
			if wait := at - time.Since(start); wait > 0 {
				time.Sleep(wait)
			}
			cpuAtWindow = cpuUs()
			windowMarked = true
		}
		if wait := at - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func(i int, at time.Duration) {
			defer wg.Done()
			sent := time.Since(start)
			err := s.send(bodies[i%len(bodies)])
			outcomes[i] = outcome{scheduled: at, sent: sent, done: time.Since(start), err: err}
		}(i, at)
	}
	if !windowMarked {
		cpuAtWindow = cpuUs()
	}
	wg.Wait()
	cpuAtEnd = cpuUs()
	r := summarise(o, outcomes, warm, window, cpuAtEnd-cpuAtWindow)
	r.TotalCPUUs = cpuAtEnd
	for _, out := range outcomes {
		if out.err == nil {
			r.TotalAnswered++
		}
	}
	return r
}

func summarise(o options, outcomes []outcome, warm, window time.Duration, cpu int64) result {
	r := result{OfferedRps: o.rate, FailedBy: map[string]int{}, CPUUs: cpu, WindowS: window.Seconds()}
	var latencies, lags []float64
	completedInWindow := 0
	for _, out := range outcomes {
		if out.scheduled < warm {
			continue
		}
		r.Sent++
		lags = append(lags, ms(out.sent-out.scheduled))
		if out.err != nil {
			r.Failed++
			key := out.err.Error()
			if f, ok := out.err.(*failure); ok {
				key = f.key
				if f.retryAfter {
					r.RetryAfter++
				}
			}
			r.FailedBy[key]++
			if r.FirstError == "" {
				r.FirstError = out.err.Error()
			}
			continue
		}
		r.Answered++
		latencies = append(latencies, ms(out.done-out.scheduled))
		if out.done <= warm+window {
			completedInWindow++
		}
	}
	r.SentRps = float64(r.Sent) / window.Seconds()
	r.AchievedRps = float64(completedInWindow) / window.Seconds()
	r.LatencyMs = quantilesOf(latencies)
	r.SendLagMs = quantilesOf(lags)
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantilesOf takes nearest-rank quantiles, as the bench's TypeScript side does; NaN-free
// (zeros) when there is nothing to summarise, so the JSON stays valid.
func quantilesOf(values []float64) quantiles {
	if len(values) == 0 {
		return quantiles{}
	}
	sort.Float64s(values)
	at := func(p float64) float64 {
		i := int(p*float64(len(values))+0.999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(values) {
			i = len(values) - 1
		}
		return values[i]
	}
	return quantiles{P50: at(0.5), P90: at(0.9), P99: at(0.99)}
}

// cpuUs is this process's user plus system CPU so far, µs.
func cpuUs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
}
