package pbwire

import (
	"errors"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Encoder appends fields to a message; the first error stops it and is returned by Result.
type Encoder struct {
	b   []byte
	err error
}

// Result is the encoded message, or the first error.
func (e *Encoder) Result() ([]byte, error) { return e.b, e.err }

// Fail records err (the first one wins): the caller's own encoding found bad input.
func (e *Encoder) Fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Str writes a string field (always, as gogo does for a non-pointer string).
func (e *Encoder) Str(num protowire.Number, s string) {
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

// OptStr writes a pointer string field when set.
func (e *Encoder) OptStr(num protowire.Number, s *string) {
	if s != nil {
		e.Str(num, *s)
	}
}

// Strs writes a repeated string field, one entry per element.
func (e *Encoder) Strs(num protowire.Number, ss []string) {
	for _, s := range ss {
		e.Str(num, s)
	}
}

// Blob writes a bytes field when it is not nil (gogo skips nil byte slices).
func (e *Encoder) Blob(num protowire.Number, b []byte) {
	if b != nil {
		e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, b)
	}
}

// Bool writes a bool field (always).
func (e *Encoder) Bool(num protowire.Number, v bool) {
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(v))
}

// OptBool writes a pointer bool field when set.
func (e *Encoder) OptBool(num protowire.Number, v *bool) {
	if v != nil {
		e.Bool(num, *v)
	}
}

// Varint writes an int64 field (negative values as their two's complement, as gogo does).
func (e *Encoder) Varint(num protowire.Number, v int64) {
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, uint64(v))
}

// Int32 writes an int32 field: the varint of the sign-extended 64-bit value, as gogo does.
func (e *Encoder) Int32(num protowire.Number, v int32) { e.Varint(num, int64(v)) }

// OptInt64 writes a pointer int64 field when set.
func (e *Encoder) OptInt64(num protowire.Number, v *int64) {
	if v != nil {
		e.Varint(num, *v)
	}
}

// OptDouble writes a pointer float64 field when set.
func (e *Encoder) OptDouble(num protowire.Number, v *float64) {
	if v != nil {
		e.b = protowire.AppendTag(e.b, num, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, math.Float64bits(*v))
	}
}

// Msg writes a nested message built by f (always, even when empty, as gogo does for a
// non-pointer message).
func (e *Encoder) Msg(num protowire.Number, f func(*Encoder)) {
	if e.err != nil {
		return
	}
	var child Encoder
	f(&child)
	if child.err != nil {
		e.err = child.err
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, child.b)
}

// Raw writes a nested message that apimachinery's generated code encodes (ObjectMeta, Time).
func (e *Encoder) Raw(num protowire.Number, marshal func() ([]byte, error)) {
	if e.err != nil {
		return
	}
	data, err := marshal()
	if err != nil {
		e.err = err
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, data)
}

// Field is one decoded field: its varint, fixed64 or length-delimited value, by its wire type.
type Field struct {
	Varint uint64
	Fixed  uint64
	Bytes  []byte
}

// Str is a length-delimited field as a string.
func (f Field) Str() string { return string(f.Bytes) }

// StrP is a length-delimited field as a new string pointer.
func (f Field) StrP() *string { s := string(f.Bytes); return &s }

// Bool is a varint field as a bool.
func (f Field) Bool() bool { return f.Varint != 0 }

// Int64P is a varint field as a new int64 pointer.
func (f Field) Int64P() *int64 { v := int64(f.Varint); return &v }

// Float64P is a fixed64 field as a new float64 pointer.
func (f Field) Float64P() *float64 {
	v := math.Float64frombits(f.Fixed)
	return &v
}

// ErrMalformed is a message that does not parse as protobuf.
var ErrMalformed = errors.New("malformed protobuf message")

// EachField calls f with every field of a message in order; unknown fields are f's to ignore.
func EachField(data []byte, f func(num protowire.Number, v Field) error) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return ErrMalformed
		}
		data = data[n:]
		var v Field
		switch typ {
		case protowire.VarintType:
			v.Varint, n = protowire.ConsumeVarint(data)
		case protowire.Fixed64Type:
			v.Fixed, n = protowire.ConsumeFixed64(data)
		case protowire.BytesType:
			v.Bytes, n = protowire.ConsumeBytes(data)
		default:
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return ErrMalformed
		}
		data = data[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}
