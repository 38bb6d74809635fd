package queryparam

import (
	"net/url"
	"testing"
)

func TestBool(t *testing.T) {
	tests := []struct {
		query string
		want  bool
	}{
		{"", false},
		{"other=true", false},
		{"watch", true},
		{"watch=", true},
		{"watch=true", true},
		{"watch=True", true},
		{"watch=1", true},
		{"watch=yes", true},
		{"watch=false", false},
		{"watch=FALSE", false},
		{"watch=False", false},
		{"watch=0", false},
		{"watch=0&watch=1", false},
	}
	for _, tt := range tests {
		q, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := Bool(q, "watch"); got != tt.want {
			t.Errorf("Bool(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestOptionalBool(t *testing.T) {
	if OptionalBool(url.Values{}, "sendInitialEvents") != nil {
		t.Fatal("absent parameter is not nil")
	}
	q := url.Values{"sendInitialEvents": {"True"}}
	if b := OptionalBool(q, "sendInitialEvents"); b == nil || !*b {
		t.Fatalf("True = %v", b)
	}
	q = url.Values{"sendInitialEvents": {"false"}}
	if b := OptionalBool(q, "sendInitialEvents"); b == nil || *b {
		t.Fatalf("false = %v", b)
	}
}

func TestAnyBool(t *testing.T) {
	q := url.Values{"output": {"0"}, "stdout": {"True"}}
	if !AnyBool(q, "output", "stdout") {
		t.Fatal("stdout=True is not read")
	}
	if AnyBool(q, "output", "stdin") {
		t.Fatal("output=0 is read as true")
	}
}
