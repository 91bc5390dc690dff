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
	n           int // rounds that had a value
}

// summarize describes the values that are not NaN (a round without a value).
func summarize(v []float64) summary {
	v = finite(v)
	return summary{med: median(v), q1: quantile(v, 0.25), q3: quantile(v, 0.75), n: len(v)}
}

func finite(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// paired applies f to the values of the same round; a round missing on either
// side (shorter slice or NaN) gives NaN.
func paired(a, b []float64, f func(x, y float64) float64) []float64 {
	n := max(len(a), len(b))
	out := make([]float64, n)
	for i := range n {
		if i >= len(a) || i >= len(b) || math.IsNaN(a[i]) || math.IsNaN(b[i]) {
			out[i] = math.NaN()
			continue
		}
		out[i] = f(a[i], b[i])
	}
	return out
}

func minus(x, y float64) float64 { return x - y }
func over(x, y float64) float64  { return x / y }
