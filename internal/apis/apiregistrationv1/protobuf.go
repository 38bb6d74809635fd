package apiregistrationv1

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf encoding of APIServices, field for field that of upstream's generated.proto for
// apiregistration.k8s.io/v1 (k8s.io/kube-aggregator), so that clients asking for
// application/vnd.kubernetes.protobuf (the conformance framework's aggregator client does) create,
// read and list them. The bytes are those gogo-generated code writes: fields in ascending number,
// non-pointer scalars and embedded messages always, pointers and bytes when set. Metadata and times
// are encoded by apimachinery's own generated code. Checked against bytes upstream's code wrote
// (testdata/apiservice-upstream.pb).

// Marshal encodes the APIService as upstream's APIService message.
func (in *APIService) Marshal() ([]byte, error) {
	var e pbEncoder
	e.apiService(in)
	return e.b, e.err
}

// Unmarshal decodes upstream's APIService message.
func (in *APIService) Unmarshal(data []byte) error {
	*in = APIService{}
	return decodeAPIService(data, in)
}

// Reset empties the APIService (the protobuf serializer calls it before Unmarshal).
func (in *APIService) Reset() { *in = APIService{} }

// Marshal encodes the list as upstream's APIServiceList message.
func (in *APIServiceList) Marshal() ([]byte, error) {
	var e pbEncoder
	e.raw(1, in.ListMeta.Marshal)
	for i := range in.Items {
		e.msg(2, func(e *pbEncoder) { e.apiService(&in.Items[i]) })
	}
	return e.b, e.err
}

// Unmarshal decodes upstream's APIServiceList message.
func (in *APIServiceList) Unmarshal(data []byte) error {
	*in = APIServiceList{}
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			return in.ListMeta.Unmarshal(v.bytes)
		case 2:
			var s APIService
			if err := decodeAPIService(v.bytes, &s); err != nil {
				return err
			}
			in.Items = append(in.Items, s)
		}
		return nil
	})
}

// Reset empties the list.
func (in *APIServiceList) Reset() { *in = APIServiceList{} }

// pbEncoder appends fields to b; the first error stops it.
type pbEncoder struct {
	b   []byte
	err error
}

func (e *pbEncoder) str(num protowire.Number, s string) {
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

func (e *pbEncoder) varint(num protowire.Number, v uint64) {
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

// int32 fields are varints of the sign-extended 64-bit value, as gogo writes them.
func (e *pbEncoder) int32(num protowire.Number, v int32) { e.varint(num, uint64(int64(v))) }

func (e *pbEncoder) msg(num protowire.Number, f func(*pbEncoder)) {
	if e.err != nil {
		return
	}
	child := pbEncoder{}
	f(&child)
	if child.err != nil {
		e.err = child.err
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, child.b)
}

// raw writes a nested message apimachinery's generated code encodes.
func (e *pbEncoder) raw(num protowire.Number, marshal func() ([]byte, error)) {
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

func (e *pbEncoder) apiService(s *APIService) {
	e.raw(1, s.ObjectMeta.Marshal)
	e.msg(2, func(e *pbEncoder) {
		sp := &s.Spec
		if sp.Service != nil {
			e.msg(1, func(e *pbEncoder) {
				e.str(1, sp.Service.Namespace)
				e.str(2, sp.Service.Name)
				if sp.Service.Port != nil {
					e.int32(3, *sp.Service.Port)
				}
			})
		}
		e.str(2, sp.Group)
		e.str(3, sp.Version)
		var skip uint64
		if sp.InsecureSkipTLSVerify {
			skip = 1
		}
		e.varint(4, skip)
		if sp.CABundle != nil {
			e.b = protowire.AppendTag(e.b, 5, protowire.BytesType)
			e.b = protowire.AppendBytes(e.b, sp.CABundle)
		}
		e.int32(7, sp.GroupPriorityMinimum)
		e.int32(8, sp.VersionPriority)
	})
	e.msg(3, func(e *pbEncoder) {
		for i := range s.Status.Conditions {
			c := &s.Status.Conditions[i]
			e.msg(1, func(e *pbEncoder) {
				e.str(1, string(c.Type))
				e.str(2, string(c.Status))
				e.raw(3, c.LastTransitionTime.Marshal)
				e.str(4, c.Reason)
				e.str(5, c.Message)
			})
		}
	})
}

func decodeAPIService(data []byte, s *APIService) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			return s.ObjectMeta.Unmarshal(v.bytes)
		case 2:
			return decodeSpec(v.bytes, &s.Spec)
		case 3:
			return eachField(v.bytes, func(num protowire.Number, v field) error {
				if num != 1 {
					return nil
				}
				var c APIServiceCondition
				if err := decodeCondition(v.bytes, &c); err != nil {
					return err
				}
				s.Status.Conditions = append(s.Status.Conditions, c)
				return nil
			})
		}
		return nil
	})
}

func decodeSpec(data []byte, sp *APIServiceSpec) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			ref := &ServiceReference{}
			sp.Service = ref
			return eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					ref.Namespace = string(v.bytes)
				case 2:
					ref.Name = string(v.bytes)
				case 3:
					p := int32(v.varint)
					ref.Port = &p
				}
				return nil
			})
		case 2:
			sp.Group = string(v.bytes)
		case 3:
			sp.Version = string(v.bytes)
		case 4:
			sp.InsecureSkipTLSVerify = v.varint != 0
		case 5:
			sp.CABundle = append([]byte{}, v.bytes...)
		case 7:
			sp.GroupPriorityMinimum = int32(v.varint)
		case 8:
			sp.VersionPriority = int32(v.varint)
		}
		return nil
	})
}

func decodeCondition(data []byte, c *APIServiceCondition) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			c.Type = APIServiceConditionType(v.bytes)
		case 2:
			c.Status = ConditionStatus(v.bytes)
		case 3:
			return c.LastTransitionTime.Unmarshal(v.bytes)
		case 4:
			c.Reason = string(v.bytes)
		case 5:
			c.Message = string(v.bytes)
		}
		return nil
	})
}

// field is one decoded field's value: varint for varint fields, bytes for length-delimited ones.
type field struct {
	varint uint64
	bytes  []byte
}

var errMalformed = errors.New("apiregistration.k8s.io/v1 protobuf: malformed message")

// eachField calls f with every field of a message; unknown fields are f's to ignore.
func eachField(data []byte, f func(num protowire.Number, v field) error) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return errMalformed
		}
		data = data[n:]
		var v field
		switch typ {
		case protowire.VarintType:
			v.varint, n = protowire.ConsumeVarint(data)
		case protowire.BytesType:
			v.bytes, n = protowire.ConsumeBytes(data)
		default:
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return errMalformed
		}
		data = data[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}
