package apiregistrationv1

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/skiff-sh/skiff/internal/apis/pbwire"
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
	e := newEncoder()
	e.apiService(in)
	return e.Result()
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
	e := newEncoder()
	e.Raw(1, in.ListMeta.Marshal)
	for i := range in.Items {
		e.msg(2, func(e *pbEncoder) { e.apiService(&in.Items[i]) })
	}
	return e.Result()
}

// Unmarshal decodes upstream's APIServiceList message.
func (in *APIServiceList) Unmarshal(data []byte) error {
	*in = APIServiceList{}
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			return in.ListMeta.Unmarshal(v.Bytes)
		case 2:
			var s APIService
			if err := decodeAPIService(v.Bytes, &s); err != nil {
				return err
			}
			in.Items = append(in.Items, s)
		}
		return nil
	})
}

// Reset empties the list.
func (in *APIServiceList) Reset() { *in = APIServiceList{} }

// pbEncoder is the shared wire encoder with this package's messages as methods.
type pbEncoder struct{ *pbwire.Encoder }

func newEncoder() *pbEncoder { return &pbEncoder{&pbwire.Encoder{}} }

// msg writes a nested message built by f.
func (e *pbEncoder) msg(num protowire.Number, f func(*pbEncoder)) {
	e.Msg(num, func(child *pbwire.Encoder) { f(&pbEncoder{child}) })
}

func (e *pbEncoder) apiService(s *APIService) {
	e.Raw(1, s.ObjectMeta.Marshal)
	e.msg(2, func(e *pbEncoder) {
		sp := &s.Spec
		if sp.Service != nil {
			e.msg(1, func(e *pbEncoder) {
				e.Str(1, sp.Service.Namespace)
				e.Str(2, sp.Service.Name)
				if sp.Service.Port != nil {
					e.Int32(3, *sp.Service.Port)
				}
			})
		}
		e.Str(2, sp.Group)
		e.Str(3, sp.Version)
		e.Bool(4, sp.InsecureSkipTLSVerify)
		e.Blob(5, sp.CABundle)
		e.Int32(7, sp.GroupPriorityMinimum)
		e.Int32(8, sp.VersionPriority)
	})
	e.msg(3, func(e *pbEncoder) {
		for i := range s.Status.Conditions {
			c := &s.Status.Conditions[i]
			e.msg(1, func(e *pbEncoder) {
				e.Str(1, string(c.Type))
				e.Str(2, string(c.Status))
				e.Raw(3, c.LastTransitionTime.Marshal)
				e.Str(4, c.Reason)
				e.Str(5, c.Message)
			})
		}
	})
}

func decodeAPIService(data []byte, s *APIService) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			return s.ObjectMeta.Unmarshal(v.Bytes)
		case 2:
			return decodeSpec(v.Bytes, &s.Spec)
		case 3:
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				if num != 1 {
					return nil
				}
				var c APIServiceCondition
				if err := decodeCondition(v.Bytes, &c); err != nil {
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
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			ref := &ServiceReference{}
			sp.Service = ref
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					ref.Namespace = string(v.Bytes)
				case 2:
					ref.Name = string(v.Bytes)
				case 3:
					p := int32(v.Varint)
					ref.Port = &p
				}
				return nil
			})
		case 2:
			sp.Group = string(v.Bytes)
		case 3:
			sp.Version = string(v.Bytes)
		case 4:
			sp.InsecureSkipTLSVerify = v.Varint != 0
		case 5:
			sp.CABundle = append([]byte{}, v.Bytes...)
		case 7:
			sp.GroupPriorityMinimum = int32(v.Varint)
		case 8:
			sp.VersionPriority = int32(v.Varint)
		}
		return nil
	})
}

func decodeCondition(data []byte, c *APIServiceCondition) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			c.Type = APIServiceConditionType(v.Bytes)
		case 2:
			c.Status = ConditionStatus(v.Bytes)
		case 3:
			return c.LastTransitionTime.Unmarshal(v.Bytes)
		case 4:
			c.Reason = string(v.Bytes)
		case 5:
			c.Message = string(v.Bytes)
		}
		return nil
	})
}
