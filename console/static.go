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
	once        sync.Once
	raw, gz     []byte
	etag, ctype string
	err         error
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
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", "no-cache") // revalidated by ETag: a new binary's page is seen at once
	h.Add("Vary", "Accept-Encoding")
	if etagMatches(r.Header.Get("If-None-Match"), f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.raw
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
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

func acceptsGzip(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") || strings.TrimSpace(enc) == "*" {
			return !strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") || strings.Contains(params, "q=0.")
		}
	}
	return false
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
