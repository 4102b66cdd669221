package mcpclients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/mcpauth"
)

// Cause names the root cause of a connection to the server that failed with err, and what to do about it: a refused
// connection, a host name DNS does not know, a TLS failure, credentials refused (401, 403), a timeout, a command
// that is not there, or a stdio server that exited, whose last stderr lines (stderr, see Status.Stderr) say why. It
// returns "" when it knows no more than err says, or when err says what to do already (a login is needed).
func Cause(cfg ServerConfig, err error, stderr []string) string {
	if err == nil || errors.Is(err, mcpauth.ErrNeedsLogin) {
		return ""
	}
	msg := err.Error()
	where := "the server"
	if u, perr := url.Parse(cfg.URL); perr == nil && u.Host != "" {
		where = u.Host
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timed out: %s did not answer within connect_timeout (%s); check that it runs, or raise connect_timeout", where, cfg.ConnectTimeout)
	}
	if c := NetCause(err, where); c != "" {
		return c
	}
	switch {
	case errors.Is(err, exec.ErrNotFound) || (cfg.Transport == TransportStdio && errors.Is(err, fs.ErrNotExist)):
		return fmt.Sprintf("command %q not found: install it, or give its full path in command", cfg.Command)
	case strings.Contains(msg, "Unauthorized"):
		return fmt.Sprintf("401 Unauthorized: %s wants credentials; set its token in headers, or, if it uses OAuth, run `agenthost mcp login %s`", where, cfg.Name)
	case strings.Contains(msg, "Forbidden"):
		return fmt.Sprintf("403 Forbidden: %s refused the credentials; check the token in headers, or run `agenthost mcp login %s` again", where, cfg.Name)
	case cfg.Transport == TransportStdio && len(stderr) > 0:
		return "the server exited before it answered; its last lines on stderr say why"
	case cfg.Transport == TransportStdio:
		return fmt.Sprintf("the server closed its output before it answered, and wrote nothing on stderr; run %q by hand to see why", cfg.Command)
	}
	return ""
}

// NetCause names the network failure err reports in reaching where (a host:port, or a name), and what to do about
// it: a refused connection, a host name DNS does not know, a TLS failure, a network timeout; "" for none of these.
func NetCause(err error, where string) string {
	msg := err.Error()
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
		return fmt.Sprintf("connection refused: nothing listens at %s; start the server, or correct url", where)
	case errors.As(err, &dnsErr) || strings.Contains(msg, "no such host"):
		return fmt.Sprintf("DNS: the host name of %s is not known; correct url, or check the network", where)
	case errors.As(err, &recordErr) || strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("TLS: %s does not speak TLS; use an http:// url", where)
	case errors.As(err, &certErr) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		strings.Contains(msg, "x509: ") || strings.Contains(msg, "tls: "):
		return fmt.Sprintf("TLS: the certificate of %s is not trusted or does not match its name; correct url, or install the CA that signed it", where)
	case isTimeout(err):
		return fmt.Sprintf("timed out: %s did not answer in time; check that it runs and can be reached", where)
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// why returns the log attributes of a server that failed with err: the error, its cause and the child's last
// stderr lines.
func (s *Server) why(err error) []any {
	st := s.Status()
	attrs := []any{"err", err}
	if st.Cause != "" {
		attrs = append(attrs, "cause", st.Cause)
	}
	if len(st.Stderr) > 0 {
		attrs = append(attrs, "stderr", strings.Join(st.Stderr, "\n"))
	}
	return attrs
}

// explain is what is added to the error of a server that failed to start: its cause and the child's last stderr
// lines, on lines of their own, or "".
func (s *Server) explain() string {
	st := s.Status()
	var b strings.Builder
	if st.Cause != "" {
		b.WriteString("\n  " + st.Cause)
	}
	for _, line := range st.Stderr {
		b.WriteString("\n    " + line)
	}
	return b.String()
}
