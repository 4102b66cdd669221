package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/internal/statedir"
)

// Grant is what a login to one server leaves: the client it used, the authorization server's endpoints, and the
// token. It holds secrets: never log it.
type Grant struct {
	// Server is the configured server's name; URL its endpoint. A grant for another URL is not used.
	Server string `json:"server"`
	URL    string `json:"url"`
	// ClientID and ClientSecret are the client the token was issued to; Registered says the client was registered
	// dynamically by agenthost (the next login reuses it), for RedirectURL.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	Registered   bool   `json:"registered,omitempty"`
	RedirectURL  string `json:"redirect_url,omitempty"`
	// Issuer, AuthURL and TokenURL are the authorization server's; AuthStyle how the client authenticates to it.
	Issuer    string           `json:"issuer,omitempty"`
	AuthURL   string           `json:"auth_url"`
	TokenURL  string           `json:"token_url"`
	AuthStyle oauth2.AuthStyle `json:"auth_style"`
	// Scopes are those asked for.
	Scopes []string      `json:"scopes,omitempty"`
	Token  *oauth2.Token `json:"token"`
	// Updated is when the grant was last saved.
	Updated time.Time `json:"updated"`
}

// config is the OAuth client configuration of the grant, to refresh its token with.
func (g *Grant) config() *oauth2.Config {
	return &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes, RedirectURL: g.RedirectURL,
		Endpoint: oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
}

// State describes the grant for people: "needs login" (no token), "logged in", "expired" (and no refresh token), or
// "refreshable" (the access token expired; the refresh token gets a new one at the next request).
func (g *Grant) State(now time.Time) string {
	switch {
	case g.Token == nil || g.Token.AccessToken == "":
		return "needs login"
	case g.Token.Expiry.IsZero() || g.Token.Expiry.After(now):
		return "logged in"
	case g.Token.RefreshToken != "":
		return "refreshable"
	}
	return "expired"
}

// Store keeps grants, by server name.
type Store interface {
	// LoadGrant returns the grant of server, or nil and no error when there is none.
	LoadGrant(ctx context.Context, server string) (*Grant, error)
	// SaveGrant inserts or replaces g.
	SaveGrant(ctx context.Context, g *Grant) error
	// DeleteGrant deletes the grant of server; deleting one that is gone is not an error.
	DeleteGrant(ctx context.Context, server string) error
	// Grants returns every grant, by server name.
	Grants(ctx context.Context) ([]*Grant, error)
}

// FileStore keeps grants in a JSON file, mode 0600, replaced whole at each save: for agents whose state is kept in
// memory. Several processes may share it; the last save wins.
type FileStore struct {
	Path string
	// Logger receives the warning that the file was readable by others, when it is tightened; nil discards it.
	Logger *slog.Logger

	mu sync.Mutex
}

var _ Store = (*FileStore)(nil)

func (f *FileStore) read() (map[string]*Grant, error) {
	// A file left readable by others (by an older agenthost, or copied in) is made private before its tokens are
	// read. A symbolic link in the file's place (kept with dotfiles, say) is refused, not followed: each save
	// replaces the file whole, by rename, which would put a regular file in the link's place and leave its target
	// behind with the old tokens.
	if err := statedir.TightenFile(f.Path, f.Logger); err != nil {
		if fi, lerr := os.Lstat(f.Path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("grants file: %w: each save replaces it whole, so keep the file itself there", err)
		}
		return nil, fmt.Errorf("grants file: %w", err)
	}
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*Grant{}, nil
	}
	if err != nil {
		return nil, err
	}
	grants := map[string]*Grant{}
	if err := json.Unmarshal(b, &grants); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return grants, nil
}

func (f *FileStore) write(grants map[string]*Grant) error {
	b, err := json.MarshalIndent(grants, "", "  ")
	if err != nil {
		return err
	}
	if err := statedir.MkdirPrivate(filepath.Dir(f.Path)); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), ".grants-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.Path) // CreateTemp made it 0600
}

func (f *FileStore) LoadGrant(_ context.Context, server string) (*Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	grants, err := f.read()
	if err != nil {
		return nil, err
	}
	return grants[server], nil
}

func (f *FileStore) SaveGrant(_ context.Context, g *Grant) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	grants, err := f.read()
	if err != nil {
		return err
	}
	grants[g.Server] = g
	return f.write(grants)
}

func (f *FileStore) DeleteGrant(_ context.Context, server string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	grants, err := f.read()
	if err != nil || grants[server] == nil {
		return err
	}
	delete(grants, server)
	return f.write(grants)
}

func (f *FileStore) Grants(_ context.Context) ([]*Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	grants, err := f.read()
	if err != nil {
		return nil, err
	}
	out := make([]*Grant, 0, len(grants))
	for _, g := range grants {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *Grant) int { return strings.Compare(a.Server, b.Server) })
	return out, nil
}
