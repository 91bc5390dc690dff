package main

import (
	"math"
	"slices"
)

// quantile is the q-quantile of v with linear interpolation between order
// statistics (R type 7, as numpy's default). NaN for an empty slice.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (h-float64(lo))*(s[hi]-s[lo])
}

func median(v []float64) float64 { return quantile(v, 0.5) }

// summary is the median and quartiles of per-round values.
type summary struct {
	med, q1, q3 float64
	n           int
}

func summarize(v []float64) summary {
	return summary{med: median(v), q1: quantile(v, 0.25), q3: quantile(v, 0.75), n: len(v)}
}

// paired applies f to the values of the same round.
func paired(a, b []float64, f func(x, y float64) float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, n)
	for i := range n {
		out[i] = f(a[i], b[i])
	}
	return out
}
