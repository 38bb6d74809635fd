package admission

import (
	"context"
	"slices"
	"testing"
)

func TestWarnings(t *testing.T) {
	AddWarning(context.Background(), "dropped: no request") // outside a request: no panic, nothing kept
	ctx, w := WithWarnings(context.Background())
	AddWarning(ctx, "first")
	AddWarning(ctx, "")
	AddWarning(ctx, "second")
	if got, want := w.Messages(), []string{"first", "second"}; !slices.Equal(got, want) {
		t.Errorf("Messages() = %q, want %q", got, want)
	}
	inner, other := WithWarnings(ctx)
	AddWarning(inner, "inner")
	if got := w.Messages(); len(got) != 2 {
		t.Errorf("a nested request's warning reached the outer one: %q", got)
	}
	if got := other.Messages(); !slices.Equal(got, []string{"inner"}) {
		t.Errorf("nested Messages() = %q", got)
	}
}
