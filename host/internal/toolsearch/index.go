// Package toolsearch is the index behind tool search: a BM25F ranking over a tool's fields (name, source,
// description, parameters, the source's description) with stemming and stop words, a bonus for queries that name a
// tool, and the reciprocal rank fusion of that ranking with a ranking by embedding vectors.
//
// It knows nothing of host's types: host turns tools into Fields. It imports the standard library and the Snowball
// English stemmer only.
package toolsearch

import (
	"math"
	"slices"
	"sync"
)

// Field is one field of a tool's document.
type Field int

const (
	// FieldName is the tool's name, without a prefix shared with its source.
	FieldName Field = iota
	// FieldSource is the source's name ("github" for "mcp:github") and the tool name's prefix shared with it.
	FieldSource
	// FieldDescription is the tool's description.
	FieldDescription
	// FieldParams are the parameters' names and descriptions.
	FieldParams
	// FieldSourceDescription is what the source says of itself (an MCP server's instructions, a peer's card).
	FieldSourceDescription
	// NumFields is the number of fields.
	NumFields
)

// Fields is a tool's document, by Field.
type Fields [NumFields]string

// Params are the ranking's parameters. The defaults were set by hand, not fitted to any data; internal/bench/toolrank
// measures them on APIBench.
type Params struct {
	// K1 saturates a term's weighted frequency.
	K1 float64
	// Weight is each field's weight.
	Weight [NumFields]float64
	// B is each field's length normalisation, 0 (none) to 1 (full).
	B [NumFields]float64
	// Bigram is the weight of two query terms found next to each other in the name or the description, relative to
	// a term.
	Bigram float64
	// NameMatch is added, times the best term score, when the query holds every word of a tool's name.
	NameMatch float64
}

// DefaultParams returns the parameters set by hand: the name weighs most, then the source, the description, the
// parameters and the source's description.
func DefaultParams() Params {
	return Params{
		K1:        1.2,
		Weight:    [NumFields]float64{FieldName: 3, FieldSource: 1.5, FieldDescription: 1, FieldParams: 0.4, FieldSourceDescription: 0.3},
		B:         [NumFields]float64{FieldName: 0.5, FieldSource: 0.3, FieldDescription: 0.75, FieldParams: 0.75, FieldSourceDescription: 0.75},
		Bigram:    0.5,
		NameMatch: 1,
	}
}

// posting is one document's share of a term: its saturated, weighted frequency, computed at build time.
type posting struct {
	doc    int32
	weight float32
	name   bool // a primary term of the document's name
}

// Index ranks documents for queries. It is immutable once built and safe for concurrent use.
type Index struct {
	terms     map[string]int32
	postings  [][]posting
	idf       []float32
	nameTerms []uint8 // distinct primary name terms of each document
	n         int
	params    Params
	scratch   sync.Pool
}

// bigramKey is the term of two adjacent terms; the separator cannot occur in a term.
func bigramKey(a, b string) string { return a + "\x00" + b }

// Build indexes docs; a document's position is its id in hits.
func Build(docs []Fields, p *Params) *Index {
	params := DefaultParams()
	if p != nil {
		params = *p
	}
	st := stemmer{memo: map[string]string{}}
	type doc struct {
		tf  [NumFields]map[string]int
		len [NumFields]int
	}
	ix := &Index{terms: map[string]int32{}, n: len(docs), params: params, nameTerms: make([]uint8, len(docs))}
	var avg [NumFields]float64
	parsed := make([]doc, len(docs))
	var tok Tokens
	for i, fields := range docs {
		d := &parsed[i]
		for f := range NumFields {
			tok = st.tokenize(fields[f], tok)
			if len(tok.Terms) == 0 {
				continue
			}
			tf := make(map[string]int, len(tok.Terms))
			for _, t := range tok.Terms {
				tf[t]++
			}
			if f == FieldName || f == FieldDescription {
				for j := 1; j < tok.Primary; j++ {
					tf[bigramKey(tok.Terms[j-1], tok.Terms[j])]++
				}
			}
			if f == FieldName {
				seen := map[string]bool{}
				for _, t := range tok.Terms[:tok.Primary] {
					seen[t] = true
				}
				ix.nameTerms[i] = uint8(min(len(seen), 255))
			}
			d.tf[f], d.len[f] = tf, len(tok.Terms)
			avg[f] += float64(len(tok.Terms))
		}
	}
	for f := range NumFields {
		avg[f] = max(avg[f]/float64(max(len(docs), 1)), 1)
	}
	// Each document's terms, over all its fields, with the weighted frequency BM25F sums before saturating.
	for i := range parsed {
		d := &parsed[i]
		var norm [NumFields]float64
		for f := range NumFields {
			norm[f] = params.Weight[f] / (1 - params.B[f] + params.B[f]*float64(d.len[f])/avg[f])
		}
		sum := map[string]float64{}
		inName := map[string]bool{}
		for f := range NumFields {
			for t, n := range d.tf[f] {
				w := float64(n) * norm[f]
				if isBigram(t) {
					w *= params.Bigram
				}
				sum[t] += w
				if f == FieldName && !isBigram(t) {
					inName[t] = true
				}
			}
		}
		// Terms in a fixed order, so that postings, and so ties, do not depend on map order.
		keys := make([]string, 0, len(sum))
		for t := range sum {
			keys = append(keys, t)
		}
		slices.Sort(keys)
		for _, t := range keys {
			id, ok := ix.terms[t]
			if !ok {
				id = int32(len(ix.postings))
				ix.terms[t] = id
				ix.postings = append(ix.postings, nil)
			}
			w := sum[t]
			ix.postings[id] = append(ix.postings[id], posting{doc: int32(i), weight: float32(w / (params.K1 + w)), name: inName[t]})
		}
	}
	ix.idf = make([]float32, len(ix.postings))
	for id, ps := range ix.postings {
		df := float64(len(ps))
		ix.idf[id] = float32(math.Log(1 + (float64(ix.n)-df+0.5)/(df+0.5)))
	}
	ix.scratch.New = func() any {
		return &scratch{acc: make([]float32, ix.n), names: make([]uint8, ix.n)}
	}
	return ix
}

func isBigram(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] == 0 {
			return true
		}
	}
	return false
}

// Len is the number of documents.
func (ix *Index) Len() int { return ix.n }

// Hit is a document that matched, with its score: higher is better.
type Hit struct {
	Doc   int
	Score float64
}

type scratch struct {
	acc     []float32
	names   []uint8
	touched []int32
	tok     Tokens
	st      stemmer
}

// Search returns the best limit documents for query among those allow keeps (nil keeps all), best first; ties go to
// the earlier document.
func (ix *Index) Search(query string, limit int, allow func(doc int) bool) []Hit {
	if limit <= 0 || ix.n == 0 {
		return nil
	}
	s := ix.scratch.Get().(*scratch)
	defer ix.scratch.Put(s)
	s.tok = s.st.tokenize(query, s.tok)
	terms := s.tok.Terms
	s.touched = s.touched[:0]
	best := float32(0)
	add := func(key string, nameTerm bool) {
		id, ok := ix.terms[key]
		if !ok {
			return
		}
		idf := ix.idf[id]
		best = max(best, idf)
		for _, p := range ix.postings[id] {
			if s.acc[p.doc] == 0 {
				s.touched = append(s.touched, p.doc)
			}
			s.acc[p.doc] += idf * p.weight
			if nameTerm && p.name {
				s.names[p.doc]++
			}
		}
	}
	for i, t := range terms {
		if slices.Contains(terms[:i], t) {
			continue // a word said twice counts once
		}
		add(t, true)
	}
	for i := 1; i < s.tok.Primary; i++ {
		add(bigramKey(terms[i-1], terms[i]), false)
	}
	hits := make([]Hit, 0, limit+1)
	for _, d := range s.touched {
		score := s.acc[d]
		if n := ix.nameTerms[d]; n > 0 && s.names[d] >= n {
			score += float32(ix.params.NameMatch) * best
		}
		s.acc[d], s.names[d] = 0, 0
		if score <= 0 || len(hits) == limit && !better(float64(score), int(d), hits[limit-1]) {
			continue
		}
		if allow != nil && !allow(int(d)) {
			continue
		}
		hits = insertHit(hits, Hit{Doc: int(d), Score: float64(score)}, limit)
	}
	return hits
}

// better reports whether a document with score at doc ranks before h.
func better(score float64, doc int, h Hit) bool {
	return score > h.Score || score == h.Score && doc < h.Doc
}

// insertHit inserts h into hits, kept sorted best first and at most limit long.
func insertHit(hits []Hit, h Hit, limit int) []Hit {
	i := len(hits)
	for i > 0 && better(h.Score, h.Doc, hits[i-1]) {
		i--
	}
	hits = slices.Insert(hits, i, h)
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
