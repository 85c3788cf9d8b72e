package config

import (
	"strings"
	"testing"
)

func TestParse_APICORS(t *testing.T) {
	t.Parallel()
	if d := Default(); len(d.API.CORSAllowedOrigins) != 0 || d.API.CORSAllowCredentials {
		t.Fatalf("CORS must be off by default: %+v", d.API)
	}
	cfg, err := Parse([]byte(`
[api]
cors_allowed_origins = ["https://app.example", "http://localhost:3000", "http://[::1]:8081"]
cors_allow_credentials = true
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.API.CORSAllowedOrigins, " "); got != "https://app.example http://localhost:3000 http://[::1]:8081" || !cfg.API.CORSAllowCredentials {
		t.Errorf("api = %+v", cfg.API)
	}
}

func TestValidate_CORSOriginErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, origins, want string
	}{
		{"Wildcard", `["*"]`, `api.cors_allowed_origins[0]: no wildcard`},
		{"WildcardSubdomain", `["https://*.example"]`, `api.cors_allowed_origins[0]: no wildcard`},
		{"TrailingSlash", `["https://app.example/"]`, `api.cors_allowed_origins[0]: must be an origin`},
		{"Path", `["https://app.example/app"]`, `must be an origin`},
		{"NoScheme", `["app.example"]`, `must be an origin`},
		{"OtherScheme", `["ftp://app.example"]`, `must be an origin`},
		{"Query", `["https://app.example?x=1"]`, `must be an origin`},
		{"UserInfo", `["https://me@app.example"]`, `must be an origin`},
		{"UpperCase", `["https://App.example"]`, `must be lower case`},
		{"DefaultPort", `["https://app.example:443"]`, `write "https://app.example"`},
		{"BadPort", `["http://localhost:70000"]`, `port must be 1..65535`},
		{"Twice", `["https://a.example", "https://a.example"]`, `api.cors_allowed_origins[1]: "https://a.example" appears twice`},
		{"SecondBad", `["https://a.example", "null"]`, `api.cors_allowed_origins[1]: must be an origin`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte("[api]\ncors_allowed_origins = " + tc.origins + "\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	_, err := Parse([]byte("[api]\ncors_allow_credentials = true\n"))
	if err == nil || !strings.Contains(err.Error(), "api.cors_allow_credentials: is on but api.cors_allowed_origins is empty") {
		t.Fatalf("credentials without origins: %v", err)
	}
}
