package apiextensionsv1

import (
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/apis/pbwire"
)

// The protobuf encoding of the definitions, field for field that of upstream's generated.proto for
// apiextensions.k8s.io/v1 (k8s.io/apiextensions-apiserver), so that clients asking for
// application/vnd.kubernetes.protobuf (the conformance framework does) read and send definitions.
// The bytes are those gogo-generated code writes: fields in ascending number, non-pointer scalars
// and embedded messages always, pointers and bytes when set, map entries by sorted key. Metadata
// is encoded by apimachinery's own generated code. Checked against bytes upstream's code wrote
// (testdata/crd-upstream.pb).

// Marshal encodes the definition as upstream's CustomResourceDefinition message.
func (in *CustomResourceDefinition) Marshal() ([]byte, error) {
	e := newEncoder()
	e.crd(in)
	return e.Result()
}

// Unmarshal decodes upstream's CustomResourceDefinition message.
func (in *CustomResourceDefinition) Unmarshal(data []byte) error {
	*in = CustomResourceDefinition{}
	return decodeCRD(data, in)
}

// Reset empties the definition (the protobuf serializer calls it before Unmarshal).
func (in *CustomResourceDefinition) Reset() { *in = CustomResourceDefinition{} }

// Marshal encodes the list as upstream's CustomResourceDefinitionList message.
func (in *CustomResourceDefinitionList) Marshal() ([]byte, error) {
	e := newEncoder()
	e.Raw(1, in.ListMeta.Marshal)
	for i := range in.Items {
		e.msg(2, func(e *pbEncoder) { e.crd(&in.Items[i]) })
	}
	return e.Result()
}

// Unmarshal decodes upstream's CustomResourceDefinitionList message.
func (in *CustomResourceDefinitionList) Unmarshal(data []byte) error {
	*in = CustomResourceDefinitionList{}
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			return in.ListMeta.Unmarshal(v.Bytes)
		case 2:
			var c CustomResourceDefinition
			if err := decodeCRD(v.Bytes, &c); err != nil {
				return err
			}
			in.Items = append(in.Items, c)
		}
		return nil
	})
}

// Reset empties the list.
func (in *CustomResourceDefinitionList) Reset() { *in = CustomResourceDefinitionList{} }

// pbEncoder is the shared wire encoder with this package's messages as methods.
type pbEncoder struct {
	*pbwire.Encoder
	// schemaFields is the JSONSchemaProps field table, made once per encoding and shared by the
	// nested encoders.
	schemaFields *[]schemaField
}

func newEncoder() *pbEncoder { return &pbEncoder{&pbwire.Encoder{}, new([]schemaField)} }

// msg writes a nested message built by f.
func (e *pbEncoder) msg(num protowire.Number, f func(*pbEncoder)) {
	e.Msg(num, func(child *pbwire.Encoder) { f(&pbEncoder{child, e.schemaFields}) })
}

func (e *pbEncoder) crd(c *CustomResourceDefinition) {
	e.Raw(1, c.ObjectMeta.Marshal)
	e.msg(2, func(e *pbEncoder) { e.spec(&c.Spec) })
	e.msg(3, func(e *pbEncoder) { e.status(&c.Status) })
}

func (e *pbEncoder) spec(s *CustomResourceDefinitionSpec) {
	e.Str(1, s.Group)
	e.msg(3, func(e *pbEncoder) { e.names(&s.Names) })
	e.Str(4, string(s.Scope))
	for i := range s.Versions {
		e.msg(7, func(e *pbEncoder) { e.version(&s.Versions[i]) })
	}
	if s.Conversion != nil {
		e.msg(9, func(e *pbEncoder) { e.conversion(s.Conversion) })
	}
	e.Bool(10, s.PreserveUnknownFields)
}

func (e *pbEncoder) names(n *CustomResourceDefinitionNames) {
	e.Str(1, n.Plural)
	e.Str(2, n.Singular)
	e.Strs(3, n.ShortNames)
	e.Str(4, n.Kind)
	e.Str(5, n.ListKind)
	e.Strs(6, n.Categories)
}

func (e *pbEncoder) version(v *CustomResourceDefinitionVersion) {
	e.Str(1, v.Name)
	e.Bool(2, v.Served)
	e.Bool(3, v.Storage)
	if v.Schema != nil {
		e.msg(4, func(e *pbEncoder) {
			if v.Schema.OpenAPIV3Schema != nil {
				e.msg(1, func(e *pbEncoder) { e.schema(v.Schema.OpenAPIV3Schema) })
			}
		})
	}
	if v.Subresources != nil {
		e.msg(5, func(e *pbEncoder) {
			if v.Subresources.Status != nil {
				e.msg(1, func(*pbEncoder) {})
			}
			if sc := v.Subresources.Scale; sc != nil {
				e.msg(2, func(e *pbEncoder) {
					e.Str(1, sc.SpecReplicasPath)
					e.Str(2, sc.StatusReplicasPath)
					e.OptStr(3, sc.LabelSelectorPath)
				})
			}
		})
	}
	for _, col := range v.AdditionalPrinterColumns {
		e.msg(6, func(e *pbEncoder) {
			e.Str(1, col.Name)
			e.Str(2, col.Type)
			e.Str(3, col.Format)
			e.Str(4, col.Description)
			e.Varint(5, int64(col.Priority))
			e.Str(6, col.JSONPath)
		})
	}
	e.Bool(7, v.Deprecated)
	e.OptStr(8, v.DeprecationWarning)
	for _, f := range v.SelectableFields {
		e.msg(9, func(e *pbEncoder) { e.Str(1, f.JSONPath) })
	}
}

func (e *pbEncoder) conversion(c *CustomResourceConversion) {
	e.Str(1, string(c.Strategy))
	if w := c.Webhook; w != nil {
		e.msg(2, func(e *pbEncoder) {
			if cc := w.ClientConfig; cc != nil {
				e.msg(2, func(e *pbEncoder) {
					if s := cc.Service; s != nil {
						e.msg(1, func(e *pbEncoder) {
							e.Str(1, s.Namespace)
							e.Str(2, s.Name)
							e.OptStr(3, s.Path)
							if s.Port != nil {
								e.Varint(4, int64(*s.Port))
							}
						})
					}
					e.Blob(2, cc.CABundle)
					e.OptStr(3, cc.URL)
				})
			}
			e.Strs(3, w.ConversionReviewVersions)
		})
	}
}

func (e *pbEncoder) status(s *CustomResourceDefinitionStatus) {
	for _, c := range s.Conditions {
		e.msg(1, func(e *pbEncoder) {
			e.Str(1, string(c.Type))
			e.Str(2, string(c.Status))
			e.Raw(3, c.LastTransitionTime.Marshal)
			e.Str(4, c.Reason)
			e.Str(5, c.Message)
		})
	}
	e.msg(2, func(e *pbEncoder) { e.names(&s.AcceptedNames) })
	e.Strs(3, s.StoredVersions)
}

func decodeCRD(data []byte, c *CustomResourceDefinition) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			return c.ObjectMeta.Unmarshal(v.Bytes)
		case 2:
			return decodeSpec(v.Bytes, &c.Spec)
		case 3:
			return decodeStatus(v.Bytes, &c.Status)
		}
		return nil
	})
}

func decodeSpec(data []byte, s *CustomResourceDefinitionSpec) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			s.Group = v.Str()
		case 3:
			return decodeNames(v.Bytes, &s.Names)
		case 4:
			s.Scope = ResourceScope(v.Str())
		case 7:
			var ver CustomResourceDefinitionVersion
			if err := decodeVersion(v.Bytes, &ver); err != nil {
				return err
			}
			s.Versions = append(s.Versions, ver)
		case 9:
			s.Conversion = &CustomResourceConversion{}
			return decodeConversion(v.Bytes, s.Conversion)
		case 10:
			s.PreserveUnknownFields = v.Bool()
		}
		return nil
	})
}

func decodeNames(data []byte, n *CustomResourceDefinitionNames) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			n.Plural = v.Str()
		case 2:
			n.Singular = v.Str()
		case 3:
			n.ShortNames = append(n.ShortNames, v.Str())
		case 4:
			n.Kind = v.Str()
		case 5:
			n.ListKind = v.Str()
		case 6:
			n.Categories = append(n.Categories, v.Str())
		}
		return nil
	})
}

func decodeVersion(data []byte, ver *CustomResourceDefinitionVersion) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			ver.Name = v.Str()
		case 2:
			ver.Served = v.Bool()
		case 3:
			ver.Storage = v.Bool()
		case 4:
			ver.Schema = &CustomResourceValidation{}
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				if num == 1 {
					ver.Schema.OpenAPIV3Schema = &JSONSchemaProps{}
					return newSchemaDecoder().schema(v.Bytes, ver.Schema.OpenAPIV3Schema)
				}
				return nil
			})
		case 5:
			ver.Subresources = &CustomResourceSubresources{}
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					ver.Subresources.Status = &CustomResourceSubresourceStatus{}
				case 2:
					sc := &CustomResourceSubresourceScale{}
					ver.Subresources.Scale = sc
					return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
						switch num {
						case 1:
							sc.SpecReplicasPath = v.Str()
						case 2:
							sc.StatusReplicasPath = v.Str()
						case 3:
							sc.LabelSelectorPath = v.StrP()
						}
						return nil
					})
				}
				return nil
			})
		case 6:
			var col CustomResourceColumnDefinition
			if err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					col.Name = v.Str()
				case 2:
					col.Type = v.Str()
				case 3:
					col.Format = v.Str()
				case 4:
					col.Description = v.Str()
				case 5:
					col.Priority = int32(v.Varint)
				case 6:
					col.JSONPath = v.Str()
				}
				return nil
			}); err != nil {
				return err
			}
			ver.AdditionalPrinterColumns = append(ver.AdditionalPrinterColumns, col)
		case 7:
			ver.Deprecated = v.Bool()
		case 8:
			ver.DeprecationWarning = v.StrP()
		case 9:
			var f SelectableField
			if err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				if num == 1 {
					f.JSONPath = v.Str()
				}
				return nil
			}); err != nil {
				return err
			}
			ver.SelectableFields = append(ver.SelectableFields, f)
		}
		return nil
	})
}

func decodeConversion(data []byte, c *CustomResourceConversion) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			c.Strategy = ConversionStrategyType(v.Str())
		case 2:
			w := &WebhookConversion{}
			c.Webhook = w
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 2:
					cc := &WebhookClientConfig{}
					w.ClientConfig = cc
					return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
						switch num {
						case 1:
							s := &ServiceReference{}
							cc.Service = s
							return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
								switch num {
								case 1:
									s.Namespace = v.Str()
								case 2:
									s.Name = v.Str()
								case 3:
									s.Path = v.StrP()
								case 4:
									p := int32(v.Varint)
									s.Port = &p
								}
								return nil
							})
						case 2:
							cc.CABundle = append([]byte{}, v.Bytes...)
						case 3:
							cc.URL = v.StrP()
						}
						return nil
					})
				case 3:
					w.ConversionReviewVersions = append(w.ConversionReviewVersions, v.Str())
				}
				return nil
			})
		}
		return nil
	})
}

func decodeStatus(data []byte, s *CustomResourceDefinitionStatus) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			var c CustomResourceDefinitionCondition
			if err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					c.Type = CustomResourceDefinitionConditionType(v.Str())
				case 2:
					c.Status = ConditionStatus(v.Str())
				case 3:
					var t metav1.Time
					if err := t.Unmarshal(v.Bytes); err != nil {
						return err
					}
					c.LastTransitionTime = t
				case 4:
					c.Reason = v.Str()
				case 5:
					c.Message = v.Str()
				}
				return nil
			}); err != nil {
				return err
			}
			s.Conditions = append(s.Conditions, c)
		case 2:
			return decodeNames(v.Bytes, &s.AcceptedNames)
		case 3:
			s.StoredVersions = append(s.StoredVersions, v.Str())
		}
		return nil
	})
}

func decodeJSON(data []byte) (JSON, error) {
	var j JSON
	err := pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		if num == 1 {
			j.Raw = append([]byte{}, v.Bytes...)
		}
		return nil
	})
	return j, err
}
