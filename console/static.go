package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

// assets serves the page's embedded files. Each is read, hashed and compressed once, on its first request, so that
// a console never opened costs nothing.
type assets struct {
	fsys fs.FS
	mu   sync.Mutex
	m    map[string]*asset
}

type asset struct {
	once    sync.Once
	raw, gz []byte
	// etag is the file's, gzEtag its gzipped form's.
	etag, gzEtag, ctype string
	err                 error
}

func newAssets(fsys fs.FS) *assets { return &assets{fsys: fsys, m: map[string]*asset{}} }

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := r.URL.Path
	if name == "/" {
		name = "/index.html"
	}
	name = "web" + path.Clean(name)
	if !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	f, ok := a.get(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	// The gzipped file is another representation, with an ETag of its own: a cache must not answer a client that
	// refuses gzip with it.
	body, etag := f.raw, f.etag
	gz := f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding"))
	if gz {
		body, etag = f.gz, f.gzEtag
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache") // revalidated by ETag: a new binary's page is seen at once
	h.Add("Vary", "Accept-Encoding")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// get returns the file name, prepared on its first request; false when there is no such file.
func (a *assets) get(name string) (*asset, bool) {
	a.mu.Lock()
	f, ok := a.m[name]
	if !ok {
		st, err := fs.Stat(a.fsys, name)
		if err != nil || st.IsDir() {
			a.mu.Unlock()
			return nil, false
		}
		f = &asset{}
		a.m[name] = f
	}
	a.mu.Unlock()
	f.once.Do(func() { f.prepare(a.fsys, name) })
	return f, f.err == nil
}

func (f *asset) prepare(fsys fs.FS, name string) {
	if f.raw, f.err = fs.ReadFile(fsys, name); f.err != nil {
		return
	}
	sum := sha256.Sum256(f.raw)
	f.etag = `"` + hex.EncodeToString(sum[:12]) + `"`
	f.gzEtag = `"` + hex.EncodeToString(sum[:12]) + `-gz"`
	if f.ctype = mime.TypeByExtension(path.Ext(name)); f.ctype == "" {
		f.ctype = http.DetectContentType(f.raw)
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(f.raw)
	if zw.Close() == nil && b.Len() < len(f.raw) {
		f.gz = b.Bytes()
	}
}

// acceptsGzip says whether an Accept-Encoding header accepts gzip (RFC 9110 section 12.5.3): an entry for gzip
// decides, else one for *; either accepts unless its q value is 0 (0.0, 0.000); without either, gzip is refused.
func acceptsGzip(accept string) bool {
	gzipQ, starQ := -1.0, -1.0
	for part := range strings.SplitSeq(accept, ",") {
		coding, params, _ := strings.Cut(part, ";")
		q := 1.0
		for param := range strings.SplitSeq(params, ";") {
			name, value, _ := strings.Cut(param, "=")
			if strings.EqualFold(strings.TrimSpace(name), "q") {
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil || v < 0 || v > 1 {
					v = 0 // a q value that is not one accepts nothing
				}
				q = v
			}
		}
		switch coding = strings.TrimSpace(coding); {
		case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
			gzipQ = max(gzipQ, q)
		case coding == "*":
			starQ = max(starQ, q)
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

func etagMatches(header, etag string) bool {
	for part := range strings.SplitSeq(header, ",") {
		p := strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if p == etag || p == "*" {
			return true
		}
	}
	return false
}
