package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// TokenPrefix starts every token GenerateToken makes, so a leaked one is
// easy to find with secret scanners.
const TokenPrefix = "sepp_"

// MinTokenBytes is the shortest token HashToken accepts: a bearer token is
// a password that nobody types, so it must be too long to guess.
const MinTokenBytes = 16

// GenerateToken returns a new random token: TokenPrefix and 32 random
// bytes, base64url.
func GenerateToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: generate token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashToken returns the lower-case hex SHA-256 of token, the form the
// config stores. A token shorter than MinTokenBytes, or with spaces in it,
// is refused.
func HashToken(token string) (string, error) {
	if len(token) < MinTokenBytes {
		return "", fmt.Errorf("auth: a token must be at least %d bytes, got %d", MinTokenBytes, len(token))
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return "", fmt.Errorf("auth: a token must not contain spaces or line breaks")
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:]), nil
}

// ParseHash decodes a configured token hash (64 hex digits).
func ParseHash(s string) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return out, fmt.Errorf("must be %d hex digits (the SHA-256 of the token; see `sepp hash-token`)", 2*sha256.Size)
	}
	copy(out[:], b)
	return out, nil
}
