package main

import (
	"math/rand/v2"
	"time"
)

// poissonArrivals lists send times over [0, span) at `rate` per second on average, with
// exponential gaps drawn from a generator seeded by `seed`, so every run of a step offers the
// same schedule.
func poissonArrivals(rate float64, span time.Duration, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	arrivals := make([]time.Duration, 0, int(rate*span.Seconds()*1.1)+16)
	at := 0.0
	for {
		at += rng.ExpFloat64() / rate
		d := time.Duration(at * float64(time.Second))
		if d >= span {
			return arrivals
		}
		arrivals = append(arrivals, d)
	}
}
