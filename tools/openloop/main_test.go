package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPoissonArrivalsAreSeededAscendingAndNearTheRate(t *testing.T) {
	a := poissonArrivals(1000, 10*time.Second, 7)
	b := poissonArrivals(1000, 10*time.Second, 7)
	if len(a) != len(b) || a[len(a)-1] != b[len(b)-1] {
		t.Fatalf("the same seed gave different schedules")
	}
	for i := 1; i < len(a); i++ {
		if a[i] < a[i-1] {
			t.Fatalf("arrival %d at %v is before arrival %d at %v", i, a[i], i-1, a[i-1])
		}
	}
	if a[len(a)-1] >= 10*time.Second {
		t.Fatalf("an arrival falls outside the span: %v", a[len(a)-1])
	}
	// 10,000 expected; a Poisson count's standard deviation is 100.
	if math.Abs(float64(len(a))-10_000) > 500 {
		t.Fatalf("%d arrivals in 10 s at 1000/s", len(a))
	}
	if c := poissonArrivals(1000, 10*time.Second, 8); c[0] == a[0] && c[1] == a[1] {
		t.Fatalf("another seed gave the same schedule")
	}
}

func TestReadBodiesSplitsLengthPrefixedBodiesAndRefusesTruncatedFiles(t *testing.T) {
	dir := t.TempDir()
	var data []byte
	for _, body := range []string{"first", "", "third body"} {
		data = binary.LittleEndian.AppendUint32(data, uint32(len(body)))
		data = append(data, body...)
	}
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, data, 0o600); err != nil {
		t.Fatal(err)
	}
	bodies, err := readBodies(good)
	if err != nil || len(bodies) != 3 || string(bodies[0]) != "first" || string(bodies[2]) != "third body" {
		t.Fatalf("got %q, %v", bodies, err)
	}
	for name, bad := range map[string][]byte{
		"short prefix": {1, 0},
		"long body":    binary.LittleEndian.AppendUint32(nil, 10),
		"empty":        {},
	} {
		path := filepath.Join(dir, "bad")
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readBodies(path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestQuantilesTakeTheNearestRank(t *testing.T) {
	values := make([]float64, 100)
	for i := range values {
		values[i] = float64(100 - i)
	}
	q := quantilesOf(values)
	if q.P50 != 50 || q.P90 != 90 || q.P99 != 99 {
		t.Fatalf("got %+v", q)
	}
	if (quantilesOf(nil) != quantiles{}) {
		t.Fatalf("no values should give zeros")
	}
}

func TestSummariseCountsOnlyTheMeasuredWindow(t *testing.T) {
	warm, window := time.Second, 2*time.Second
	outcomes := []outcome{
		{scheduled: 500 * time.Millisecond, sent: 500 * time.Millisecond, done: 600 * time.Millisecond},
		{scheduled: 1500 * time.Millisecond, sent: 1501 * time.Millisecond, done: 1510 * time.Millisecond},
		{scheduled: 2000 * time.Millisecond, sent: 2000 * time.Millisecond, done: 3500 * time.Millisecond},
		{scheduled: 2500 * time.Millisecond, sent: 2500 * time.Millisecond, done: 2600 * time.Millisecond,
			err: &failure{key: "http 429", detail: "busy"}},
	}
	r := summarise(options{rate: 2}, outcomes, warm, window, 0)
	if r.Sent != 3 || r.Answered != 2 || r.Failed != 1 || r.FailedBy["http 429"] != 1 {
		t.Fatalf("got %+v", r)
	}
	// Only the answer that came back inside the window counts towards the achieved rate.
	if r.AchievedRps != 0.5 || r.SentRps != 1.5 {
		t.Fatalf("achieved %v sent %v", r.AchievedRps, r.SentRps)
	}
	if r.FirstError != "http 429: busy" {
		t.Fatalf("first error %q", r.FirstError)
	}
}
