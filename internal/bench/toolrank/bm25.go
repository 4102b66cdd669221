package main

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// baseline is the ranking agenthost's is measured against: plain BM25 (k1 = 1.2, b = 0.75) over a tool's name and
// description as one text, lower-cased and split on anything that is not a letter or a digit, with no stemming and
// no stop words.
type baseline struct {
	tf     []map[string]int
	length []int
	avg    float64
	df     map[string]int
}

const (
	baselineK1 = 1.2
	baselineB  = 0.75
)

// words splits s as the baseline does.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func newBaseline(tools []tool) *baseline {
	b := &baseline{df: map[string]int{}}
	total := 0
	for _, t := range tools {
		ws := words(t.Name + " " + t.Description)
		tf := map[string]int{}
		for _, w := range ws {
			tf[w]++
		}
		for w := range tf {
			b.df[w]++
		}
		b.tf = append(b.tf, tf)
		b.length = append(b.length, len(ws))
		total += len(ws)
	}
	b.avg = max(float64(total)/float64(max(len(tools), 1)), 1)
	return b
}

// search returns the best limit tools for query, by index, best first; ties go to the earlier tool. Each distinct
// query word counts once.
func (b *baseline) search(query string, limit int) []int {
	n := float64(len(b.tf))
	scores := make([]float64, len(b.tf))
	var seen []string
	for _, w := range words(query) {
		if slices.Contains(seen, w) || b.df[w] == 0 {
			continue
		}
		seen = append(seen, w)
		df := float64(b.df[w])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for d, tf := range b.tf {
			if f := float64(tf[w]); f > 0 {
				scores[d] += idf * f * (baselineK1 + 1) / (f + baselineK1*(1-baselineB+baselineB*float64(b.length[d])/b.avg))
			}
		}
	}
	var docs []int
	for d, s := range scores {
		if s > 0 {
			docs = append(docs, d)
		}
	}
	slices.SortStableFunc(docs, func(x, y int) int {
		switch {
		case scores[x] > scores[y]:
			return -1
		case scores[x] < scores[y]:
			return 1
		}
		return 0
	})
	return docs[:min(limit, len(docs))]
}
