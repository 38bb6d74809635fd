package pbwire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestRoundTrip writes one field of every kind and reads them back with EachField, and checks
// the gogo rules: a non-pointer field is written even when zero, a nil pointer or nil byte slice
// is not, and a nested message's error is the whole message's.
func TestRoundTrip(t *testing.T) {
	s, yes, n, f := "x", true, int64(-3), 2.5
	var e Encoder
	e.Str(1, "")
	e.OptStr(2, &s)
	e.OptStr(3, nil)
	e.Strs(4, []string{"a", "b"})
	e.Blob(5, nil)
	e.Blob(6, []byte{})
	e.Bool(7, false)
	e.OptBool(8, &yes)
	e.Int32(9, -1)
	e.OptInt64(10, &n)
	e.OptDouble(11, &f)
	e.Msg(12, func(c *Encoder) { c.Str(1, "inner") })
	e.Raw(13, func() ([]byte, error) { return []byte{0x08, 0x01}, nil })
	data, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	got := map[protowire.Number][]Field{}
	if err := EachField(data, func(num protowire.Number, v Field) error {
		got[num] = append(got[num], v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []protowire.Number{3, 5} {
		if _, ok := got[absent]; ok {
			t.Errorf("field %d written for a nil value", absent)
		}
	}
	checks := []struct {
		num  protowire.Number
		ok   bool
		what string
	}{
		{1, len(got[1]) == 1 && got[1][0].Str() == "", "empty string written"},
		{2, len(got[2]) == 1 && *got[2][0].StrP() == "x", "pointer string"},
		{4, len(got[4]) == 2 && got[4][1].Str() == "b", "repeated strings in order"},
		{6, len(got[6]) == 1 && len(got[6][0].Bytes) == 0, "empty, non-nil bytes written"},
		{7, len(got[7]) == 1 && !got[7][0].Bool(), "false written"},
		{8, len(got[8]) == 1 && got[8][0].Bool(), "pointer bool"},
		{9, len(got[9]) == 1 && int32(got[9][0].Varint) == -1 && got[9][0].Varint == ^uint64(0), "int32 sign-extended to 64 bits"},
		{10, len(got[10]) == 1 && *got[10][0].Int64P() == -3, "int64"},
		{11, len(got[11]) == 1 && *got[11][0].Float64P() == 2.5, "double"},
		{12, len(got[12]) == 1 && string(got[12][0].Bytes) == "\x0a\x05inner", "nested message"},
		{13, len(got[13]) == 1 && string(got[13][0].Bytes) == "\x08\x01", "raw message"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("field %d: want %s, got %+v", c.num, c.what, got[c.num])
		}
	}
}

func TestErrors(t *testing.T) {
	boom := errors.New("boom")
	var e Encoder
	e.Str(1, "before")
	e.Msg(2, func(c *Encoder) { c.Fail(boom) })
	e.Fail(errors.New("later"))
	if _, err := e.Result(); !errors.Is(err, boom) {
		t.Errorf("a nested failure is the message's first error: %v", err)
	}
	for _, bad := range [][]byte{{0x0a, 0x05, 'a'}, {0x08}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		if err := EachField(bad, func(protowire.Number, Field) error { return nil }); !errors.Is(err, ErrMalformed) {
			t.Errorf("EachField(%x) = %v, want ErrMalformed", bad, err)
		}
	}
}
