package rules

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedactText(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain text", "dial tcp 127.0.0.1:1: connect: connection refused", "dial tcp 127.0.0.1:1: connect: connection refused"},
		{"url.Error form", `Get "http://alice:***@127.0.0.1:1/v1/x?api_key=K&sig=S": EOF`, `Get "http://127.0.0.1:1/v1/x": EOF`},
		{"unquoted, colon kept", "Get http://127.0.0.1/v1/x?sig=S: EOF", "Get http://127.0.0.1/v1/x: EOF"},
		{"fragment", "see https://h.example/cb#access_token=T now", "see https://h.example/cb now"},
		{"userinfo without a query", "http://alice:pw@h.example/x", "http://h.example/x"},
		{"username only", "https://alice@h.example", "https://h.example"},
		{"scheme-relative Location", `failed to parse Location header "//u:pw@h.example/%zz?sig=S"`, `failed to parse Location header "//h.example/%zz"`},
		{"relative Location", `failed to parse Location header "/dl?X-Amz-Signature=S%zz": parse "/dl?X-Amz-Signature=S%zz": invalid URL escape "%zz"`,
			`failed to parse Location header "/dl": parse "/dl": invalid URL escape "%zz"`},
		{"query-only reference", `parse "?sig=S%zz": bad`, `parse "": bad`},
		{"'@' in a query", "https://h.example/x?email=a@b.example", "https://h.example/x"},
		{"'?' before '@' in the authority", "http://u:p?w@h.example/x", "http://"},
		{"query without a path", "http://h.example?sig=S", "http://h.example"},
		{"angle brackets", "<https://h.example/x?sig=S>", "<https://h.example/x>"},
		{"a question, not a query", "state unknown? try again", "state unknown? try again"},
		{"a number sign, not a fragment", "check #3 failed", "check #3 failed"},
		{"several URLs", "a http://h/x?k=1 b https://u@i/y#f", "a http://h/x b https://i/y"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RedactText(tt.in))
		})
	}
}

func TestRedactError(t *testing.T) {
	full := "https://alice:pw@api.example/v1/x?sig=S&api_key=K#F"
	raw, err := url.Parse(full)
	require.NoError(t, err)
	odd := "https://api.example/v1/x?sig=S\x01" // %q quotes it with an escape
	for _, tt := range []struct {
		name string
		err  error
		raw  *url.URL
		want string
	}{
		{"nil", nil, nil, ""},
		{"url.Error", &url.Error{Op: "Get", URL: full, Err: errors.New("EOF")}, nil, `Get "https://api.example/v1/x": EOF`},
		{"wrapped url.Error", fmt.Errorf("sdk: %w", &url.Error{Op: "Get", URL: full, Err: errors.New("EOF")}), nil, `sdk: Get "https://api.example/v1/x": EOF`},
		{"url.Error with an escaped byte", &url.Error{Op: "Get", URL: odd, Err: errors.New("EOF")}, nil, `Get "https://api.example/v1/x": EOF`},
		{"joined", errors.Join(errors.New("first"), &url.Error{Op: "Post", URL: odd, Err: errors.New("EOF")}), nil, "first\n" + `Post "https://api.example/v1/x": EOF`},
		{"the request's own URL", fmt.Errorf("proxy refused %s", full), raw, "proxy refused https://api.example/v1/x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RedactError(tt.err, tt.raw))
		})
	}
	// The error itself is untouched.
	ue := &url.Error{Op: "Get", URL: full, Err: errors.New("EOF")}
	wrapped := fmt.Errorf("w: %w", ue)
	RedactError(wrapped, raw)
	var got *url.Error
	require.ErrorAs(t, wrapped, &got)
	assert.Equal(t, full, got.URL)
}
