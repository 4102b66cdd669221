package toolsearch

import (
	"math"
	"slices"
)

// DefaultFusionK is reciprocal rank fusion's k: the usual 60, which keeps any one ranking's top from dominating.
const DefaultFusionK = 60

// Fuse merges rankings by reciprocal rank fusion: a document scores the sum of 1/(k+rank) over the rankings that
// hold it (rank from 1). It returns the best limit, best first; ties go to the earlier document.
func Fuse(k float64, limit int, rankings ...[]Hit) []Hit {
	scores := map[int]float64{}
	for _, r := range rankings {
		for i, h := range r {
			scores[h.Doc] += 1 / (k + float64(i+1))
		}
	}
	out := make([]Hit, 0, len(scores))
	for d, s := range scores {
		out = append(out, Hit{Doc: d, Score: s})
	}
	slices.SortFunc(out, func(a, b Hit) int {
		switch {
		case better(a.Score, a.Doc, b):
			return -1
		case better(b.Score, b.Doc, a):
			return 1
		}
		return 0
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Normalize scales v to unit length in place, so that a dot product is the cosine; a zero vector stays zero.
func Normalize(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
}

// CosineRank ranks the documents by the dot product of their unit vectors with the unit vector q, best limit first,
// among those allow keeps (nil keeps all). A nil vector, or one of another length, is never ranked.
func CosineRank(q []float32, vecs [][]float32, limit int, allow func(doc int) bool) []Hit {
	if limit <= 0 {
		return nil
	}
	hits := make([]Hit, 0, limit+1)
	for d, v := range vecs {
		if len(v) != len(q) || len(v) == 0 {
			continue
		}
		var dot float32
		for i := range v {
			dot += v[i] * q[i]
		}
		if len(hits) == limit && !better(float64(dot), d, hits[limit-1]) {
			continue
		}
		if allow != nil && !allow(d) {
			continue
		}
		hits = insertHit(hits, Hit{Doc: d, Score: float64(dot)}, limit)
	}
	return hits
}
