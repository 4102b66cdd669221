package otlp

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// signal is one of the two kinds of telemetry exported: how the OTEL_EXPORTER_OTLP_* variables name it, and where
// its exports go.
type signal struct {
	env      string // TRACES or METRICS, as in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	httpPath string // the OTLP/HTTP path under a base URL
	grpcPath string // the gRPC method
	items    string // what a partial success counts
}

var (
	traceSignal = signal{env: "TRACES", httpPath: "/v1/traces",
		grpcPath: "/opentelemetry.proto.collector.trace.v1.TraceService/Export", items: "spans"}
	metricSignal = signal{env: "METRICS", httpPath: "/v1/metrics",
		grpcPath: "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", items: "metric data points"}
)

// defaultTimeout bounds an export when OTEL_EXPORTER_OTLP_TIMEOUT does not say otherwise, as the specification says.
const defaultTimeout = 10 * time.Second

// target is where and how one signal is exported, resolved from the configuration and the environment.
type target struct {
	proto string   // ProtocolHTTP or ProtocolGRPC
	url   *url.URL // the URL posted to: http(s)://host[:port]/path, the path being the gRPC method for gRPC
	// headers are sent with every export: OTEL_EXPORTER_OTLP_HEADERS, the signal's own _HEADERS over them, and
	// Config.Headers over both.
	headers map[string]string
	gzip    bool
	// timeout bounds an OTLP/HTTP request, and a gRPC export with its retries, as the Go exporters do; 0 means none.
	timeout time.Duration
	tls     *tls.Config // for https: the CA and client certificate of the variables; nil means the system's roots
}

// envReader reads the OTEL_EXPORTER_OTLP_* variables of one signal: a signal's own variable wins over the general
// one.
type envReader struct {
	getenv func(string) string
	sig    signal
}

// lookup returns OTEL_EXPORTER_OTLP_<signal>_<key>, or else OTEL_EXPORTER_OTLP_<key>, trimmed.
func (e envReader) lookup(key string) string {
	if v := strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_" + e.sig.env + "_" + key)); v != "" {
		return v
	}
	return strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_" + key))
}

// resolveTarget resolves where sig goes. base is the collector's base URL, from the configuration or the default;
// "" leaves it to OTEL_EXPORTER_OTLP_<signal>_ENDPOINT, a full URL for OTLP/HTTP, or else OTEL_EXPORTER_OTLP_ENDPOINT,
// a base URL. A problem with a variable that only refines the export (a header, a timeout, a certificate file) goes
// to the OpenTelemetry error handler and leaves the default, as the Go exporters do; an endpoint that is not an
// http(s) URL is an error.
func resolveTarget(getenv func(string) string, proto, base string, headers map[string]string, sig signal) (*target, error) {
	env := envReader{getenv: getenv, sig: sig}
	t := &target{proto: proto, timeout: defaultTimeout}

	raw, full := base, false
	if raw == "" {
		if raw = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + sig.env + "_ENDPOINT")); raw != "" {
			full = true
		} else {
			raw = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry %s endpoint %q is not an http(s) URL", strings.ToLower(sig.env), raw)
	}
	t.url = &url.URL{Scheme: u.Scheme, Host: u.Host}
	switch {
	case proto == ProtocolGRPC:
		t.url.Path = sig.grpcPath // the gRPC exporters use the host alone
	case full:
		t.url.Path = cmp.Or(u.Path, "/")
	default:
		t.url.Path = path.Join(u.Path, sig.httpPath)
	}
	// An endpoint from the environment is made plain or TLS by OTEL_EXPORTER_OTLP_INSECURE, as the Go exporters
	// do; one from the configuration by its scheme alone.
	if base == "" {
		if v := env.lookup("INSECURE"); v != "" {
			t.url.Scheme = "https"
			if strings.EqualFold(v, "true") {
				t.url.Scheme = "http"
			}
		}
	}

	t.headers = map[string]string{}
	parseHeaders(t.headers, strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_HEADERS")))
	parseHeaders(t.headers, strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_"+sig.env+"_HEADERS")))
	maps.Copy(t.headers, headers)

	t.gzip = env.lookup("COMPRESSION") == "gzip"
	if v := env.lookup("TIMEOUT"); v != "" {
		if ms, err := strconv.Atoi(v); err != nil || ms < 0 {
			otel.Handle(fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_TIMEOUT %q is not a number of milliseconds", v))
		} else {
			t.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if t.url.Scheme == "https" {
		t.tls = tlsConfig(env)
	}
	return t, nil
}

// tlsConfig returns the CA and client certificate that OTEL_EXPORTER_OTLP_CERTIFICATE, _CLIENT_CERTIFICATE and
// _CLIENT_KEY name, or nil when they name none.
func tlsConfig(env envReader) *tls.Config {
	var cfg tls.Config
	if f := env.lookup("CERTIFICATE"); f != "" {
		pem, err := os.ReadFile(f)
		pool := x509.NewCertPool()
		if err == nil && !pool.AppendCertsFromPEM(pem) {
			err = errors.New("no PEM certificate in it")
		}
		if err != nil {
			otel.Handle(fmt.Errorf("otlp: CA certificate %s: %w", f, err))
		} else {
			cfg.RootCAs = pool
		}
	}
	// The certificate and its key come from the same level: both the signal's, or both the general ones.
	cert, key := env.getenv("OTEL_EXPORTER_OTLP_"+env.sig.env+"_CLIENT_CERTIFICATE"), env.getenv("OTEL_EXPORTER_OTLP_"+env.sig.env+"_CLIENT_KEY")
	if strings.TrimSpace(cert) == "" || strings.TrimSpace(key) == "" {
		cert, key = env.getenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"), env.getenv("OTEL_EXPORTER_OTLP_CLIENT_KEY")
	}
	if cert, key = strings.TrimSpace(cert), strings.TrimSpace(key); cert != "" && key != "" {
		if pair, err := tls.LoadX509KeyPair(cert, key); err != nil {
			otel.Handle(fmt.Errorf("otlp: client certificate: %w", err))
		} else {
			cfg.Certificates = []tls.Certificate{pair}
		}
	}
	if cfg.RootCAs == nil && cfg.Certificates == nil {
		return nil
	}
	return &cfg
}

// parseHeaders adds to h the headers of an OTEL_EXPORTER_OTLP_HEADERS value: comma-separated key=value pairs in
// the W3C baggage form, values percent-encoded. A malformed pair is reported and skipped.
func parseHeaders(h map[string]string, s string) {
	if s == "" {
		return
	}
	for pair := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !validHeaderKey(k) {
			otel.Handle(fmt.Errorf("otlp: OTLP header %q is not a key=value pair", k))
			continue
		}
		v, err := url.PathUnescape(v)
		if err != nil {
			otel.Handle(fmt.Errorf("otlp: OTLP header %q: %w", k, err))
			continue
		}
		h[k] = strings.TrimSpace(v)
	}
}

// validHeaderKey reports whether k is an HTTP token.
func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if c > unicode.MaxASCII || !(unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

// temporalitySelector is OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: cumulative (the default), delta or
// lowmemory, as the specification defines them.
func temporalitySelector(getenv func(string) string) sdkmetric.TemporalitySelector {
	switch v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")); strings.ToLower(v) {
	case "", "cumulative":
	case "delta":
		return sdkmetric.DeltaTemporalitySelector
	case "lowmemory":
		return sdkmetric.LowMemoryTemporalitySelector
	default:
		otel.Handle(fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE %q is not cumulative, delta or lowmemory", v))
	}
	return func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.CumulativeTemporality }
}

// aggregationSelector is OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: explicit_bucket_histogram (the
// SDK's default) or base2_exponential_bucket_histogram, with the specification's default size and scale.
func aggregationSelector(getenv func(string) string) sdkmetric.AggregationSelector {
	switch v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION")); strings.ToLower(v) {
	case "", "explicit_bucket_histogram":
	case "base2_exponential_bucket_histogram":
		return func(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
			if k == sdkmetric.InstrumentKindHistogram {
				return sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}
			}
			return sdkmetric.DefaultAggregationSelector(k)
		}
	default:
		otel.Handle(fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION %q is not supported", v))
	}
	return sdkmetric.DefaultAggregationSelector
}
