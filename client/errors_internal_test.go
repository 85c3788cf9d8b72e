package client

import "testing"

// A FieldError's message names its field, even when the description only
// mentions the field inside a limit's name.
func TestFieldError_ErrorNamesField(t *testing.T) {
	tests := []struct {
		name string
		err  FieldError
		want string
	}{
		{"DescriptionMentionsFieldInLimit", FieldError{Field: "payload", Description: "is 1048577 bytes, above limits.max_payload_bytes 1048576"},
			"payload: is 1048577 bytes, above limits.max_payload_bytes 1048576"},
		{"DescriptionStartsWithField", FieldError{Field: "priority", Description: "priority must be 0..9, got 10"}, "priority must be 0..9, got 10"},
		{"NoField", FieldError{Description: "bad request"}, "bad request"},
		{"LimitOnly", FieldError{Field: "max", Limit: "0..1000"}, "max: exceeds 0..1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}
