package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// tokenPrefix makes a leaked token easy to recognise (secret scanners).
const tokenPrefix = "udgci_"

// Token is a stored upload token; the secret itself is never stored.
type Token struct {
	ID        int64      `json:"id"`
	Repo      string     `json:"repo"`
	Prefix    string     `json:"prefix"` // the first characters, to tell tokens apart
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// ErrBadToken is a token that is unknown or revoked.
var ErrBadToken = errors.New("unknown or revoked token")

func hashToken(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// CreateToken makes a token for repo and returns its secret, which is
// shown once: only its SHA-256 is kept.
func (s *Store) CreateToken(ctx context.Context, repo string) (string, Token, error) {
	if err := ValidRepo(repo); err != nil {
		return "", Token{}, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	secret := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	t := Token{Repo: repo, Prefix: secret[:len(tokenPrefix)+6], CreatedAt: s.now().UTC()}
	res, err := s.w.ExecContext(ctx, `INSERT INTO tokens (repo, hash, prefix, created_at) VALUES (?, ?, ?, ?)`,
		repo, hashToken(secret), t.Prefix, t.CreatedAt.UnixNano())
	if err != nil {
		return "", Token{}, fmt.Errorf("create token for %s: %w", repo, err)
	}
	if t.ID, err = res.LastInsertId(); err != nil {
		return "", Token{}, fmt.Errorf("create token for %s: %w", repo, err)
	}
	return secret, t, nil
}

// ListTokens lists every token, revoked ones included, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]Token, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, repo, prefix, created_at, revoked_at FROM tokens ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func scanToken(sc scanner) (Token, error) {
	var t Token
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(&t.ID, &t.Repo, &t.Prefix, &created, &revoked); err != nil {
		return Token{}, err
	}
	t.CreatedAt = time.Unix(0, created).UTC()
	if revoked.Valid {
		r := time.Unix(0, revoked.Int64).UTC()
		t.RevokedAt = &r
	}
	return t, nil
}

// RevokeToken revokes a token by id; revoking twice is not an error.
func (s *Store) RevokeToken(ctx context.Context, id int64) error {
	res, err := s.w.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, s.now().UnixNano(), id)
	if err != nil {
		return fmt.Errorf("revoke token %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("revoke token %d: %w", id, ErrNotFound)
	}
	return nil
}

// CheckToken returns the live token whose secret this is.
func (s *Store) CheckToken(ctx context.Context, secret string) (Token, error) {
	if !strings.HasPrefix(secret, tokenPrefix) {
		return Token{}, ErrBadToken
	}
	t, err := scanToken(s.r.QueryRowContext(ctx, `SELECT id, repo, prefix, created_at, revoked_at FROM tokens WHERE hash = ?`, hashToken(secret)))
	if errors.Is(err, sql.ErrNoRows) || err == nil && t.RevokedAt != nil {
		return Token{}, ErrBadToken
	}
	if err != nil {
		return Token{}, fmt.Errorf("check token: %w", err)
	}
	return t, nil
}
