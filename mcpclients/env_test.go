package mcpclients

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestStdioEnvironment starts a real child that reports its environment: agenthost's secrets are not in it; the
// allow-listed variables, the configured env and the variables env_passthrough names are.
func TestStdioEnvironment(t *testing.T) {
	for k, v := range map[string]string{
		"OPENAI_API_KEY":        "sk-planted-openai-key",
		"DATABASE_URL":          "postgres://agent:planted-db-password@db/app",
		"AGENTHOST_SERVE_TOKEN": "planted-serve-token",
		"AWS_ACCESS_KEY_ID":     "AKIAPLANTEDKEYID",
		"AWS_REGION":            "eu-west-3",
		"AWSX_NOT_MATCHED":      "planted-awsx",
		"EXTRA_ONE":             "extra-1",
		"HOME":                  "/home/planted",
		"LANG":                  "fr_FR.UTF-8",
		"LC_TIME":               "de_DE.UTF-8",
		"LC_CTYPE":              "() { echo planted-function; }",
		"TZ":                    "Europe/Paris",
		"TMPDIR":                "/tmp/planted",
		"TERM":                  "xterm-planted",
		"OVERRIDDEN":            "from-agenthost",
		"HTTPS_PROXY":           "http://proxy.internal:3128",
		"http_proxy":            "http://alice:planted-proxy-password@proxy.internal:3128",
		"NODE_EXTRA_CA_CERTS":   "/etc/planted/ca.pem",
	} {
		t.Setenv(k, v)
	}
	cfg := selfServer(t, "env", "env")
	cfg.Env["CONFIGURED"] = "from-config"
	cfg.Env["OVERRIDDEN"] = "from-config"
	cfg.EnvPassthrough = []string{"AWS_*", "EXTRA_ONE", "OVERRIDDEN"}
	c, err := Connect(t.Context(), []ServerConfig{cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := findTool(t, c.Toolsets()[0], "env_environ").Call(t.Context(), json.RawMessage(`{}`), nil)
	if err != nil || res.IsError {
		t.Fatalf("environ: %v %+v", err, res)
	}
	got := strings.Split(res.Text, "\n")
	for _, want := range []string{"HOME=/home/planted", "LANG=fr_FR.UTF-8", "LC_TIME=de_DE.UTF-8", "TZ=Europe/Paris",
		"TMPDIR=/tmp/planted", "TERM=xterm-planted", "AWS_ACCESS_KEY_ID=AKIAPLANTEDKEYID", "AWS_REGION=eu-west-3",
		"EXTRA_ONE=extra-1", "CONFIGURED=from-config", "OVERRIDDEN=from-config", serverEnv + "=env",
		"HTTPS_PROXY=http://proxy.internal:3128", "NODE_EXTRA_CA_CERTS=/etc/planted/ca.pem"} {
		if !slices.Contains(got, want) {
			t.Errorf("the child's environment lacks %s", want)
		}
	}
	if !slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Error("the child's environment lacks PATH")
	}
	for _, secret := range []string{"sk-planted-openai-key", "planted-db-password", "planted-serve-token", "planted-awsx",
		"planted-function", "from-agenthost", "planted-proxy-password"} {
		if strings.Contains(res.Text, secret) {
			t.Errorf("the child's environment holds %q:\n%s", secret, res.Text)
		}
	}
}

// TestChildEnvWindows: on Windows a configured variable replaces an inherited one whatever its case, and the
// allow-list matches names in any case.
func TestChildEnvWindows(t *testing.T) {
	environ := []string{"PATH=C:\\Windows", "SystemRoot=C:\\Windows", "OPENAI_API_KEY=sk-planted"}
	got := childEnvOn("windows", environ, nil, map[string]string{"Path": "C:\\tools"})
	want := []string{"SystemRoot=C:\\Windows", "Path=C:\\tools"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnvOn(windows)\n got %q\nwant %q", got, want)
	}
	got = childEnvOn("linux", []string{"PATH=/bin"}, nil, map[string]string{"Path": "/opt"})
	if want := []string{"PATH=/bin", "Path=/opt"}; !slices.Equal(got, want) {
		t.Errorf("childEnvOn(linux)\n got %q\nwant %q (names differing in case are two variables)", got, want)
	}
}

// TestChildEnvProxy: the proxy and certificate variables are inherited, except a proxy whose address holds a
// password, which env_passthrough can still name.
func TestChildEnvProxy(t *testing.T) {
	environ := []string{"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "ALL_PROXY=socks5://u:pw@proxy:1080",
		"http_proxy=user:pw@proxy:3128", "SSL_CERT_FILE=/ca.pem", "SSL_CERT_DIR=/certs"}
	want := []string{"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "SSL_CERT_FILE=/ca.pem", "SSL_CERT_DIR=/certs"}
	if got := childEnvOn("linux", environ, nil, nil); !slices.Equal(got, want) {
		t.Errorf("childEnvOn\n got %q\nwant %q", got, want)
	}
	if got := childEnvOn("linux", environ, []string{"ALL_PROXY"}, nil); !slices.Contains(got, "ALL_PROXY=socks5://u:pw@proxy:1080") {
		t.Errorf("env_passthrough did not pass ALL_PROXY: %q", got)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"AWS_*", "AWS_REGION", true}, {"AWS_*", "AWS_", true}, {"AWS_*", "AWSX", false}, {"*", "ANY", true},
		{"*_TOKEN", "GH_TOKEN", true}, {"*_TOKEN", "GH_TOKENS", false}, {"A*B*C", "AxxBxxC", true}, {"A*B*C", "AC", false},
		{"A*BC*C", "ABCC", true}, {"NAME", "NAME", true}, {"NAME", "NAMES", false}, {"LC_*", "LC_ALL", true},
	} {
		if got := globMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.name, got)
		}
	}
}
