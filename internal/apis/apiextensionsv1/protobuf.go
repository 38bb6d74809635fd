package apiextensionsv1

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	var e pbEncoder
	e.crd(in)
	return e.b, e.err
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
	var e pbEncoder
	e.raw(1, in.ListMeta.Marshal)
	for i := range in.Items {
		e.msg(2, func(e *pbEncoder) { e.crd(&in.Items[i]) })
	}
	return e.b, e.err
}

// Unmarshal decodes upstream's CustomResourceDefinitionList message.
func (in *CustomResourceDefinitionList) Unmarshal(data []byte) error {
	*in = CustomResourceDefinitionList{}
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			return in.ListMeta.Unmarshal(v.bytes)
		case 2:
			var c CustomResourceDefinition
			if err := decodeCRD(v.bytes, &c); err != nil {
				return err
			}
			in.Items = append(in.Items, c)
		}
		return nil
	})
}

// Reset empties the list.
func (in *CustomResourceDefinitionList) Reset() { *in = CustomResourceDefinitionList{} }

// pbEncoder appends fields to b; the first error stops it.
type pbEncoder struct {
	b   []byte
	err error
}

func (e *pbEncoder) str(num protowire.Number, s string) {
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

func (e *pbEncoder) optStr(num protowire.Number, s *string) {
	if s != nil {
		e.str(num, *s)
	}
}

func (e *pbEncoder) strs(num protowire.Number, ss []string) {
	for _, s := range ss {
		e.str(num, s)
	}
}

func (e *pbEncoder) bytes(num protowire.Number, b []byte) {
	if b != nil {
		e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, b)
	}
}

func (e *pbEncoder) boolean(num protowire.Number, v bool) {
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(v))
}

func (e *pbEncoder) optBool(num protowire.Number, v *bool) {
	if v != nil {
		e.boolean(num, *v)
	}
}

func (e *pbEncoder) varint(num protowire.Number, v int64) {
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, uint64(v))
}

func (e *pbEncoder) optInt64(num protowire.Number, v *int64) {
	if v != nil {
		e.varint(num, *v)
	}
}

func (e *pbEncoder) optDouble(num protowire.Number, v *float64) {
	if v != nil {
		e.b = protowire.AppendTag(e.b, num, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, math.Float64bits(*v))
	}
}

// msg writes a nested message built by f.
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

func (e *pbEncoder) crd(c *CustomResourceDefinition) {
	e.raw(1, c.ObjectMeta.Marshal)
	e.msg(2, func(e *pbEncoder) { e.spec(&c.Spec) })
	e.msg(3, func(e *pbEncoder) { e.status(&c.Status) })
}

func (e *pbEncoder) spec(s *CustomResourceDefinitionSpec) {
	e.str(1, s.Group)
	e.msg(3, func(e *pbEncoder) { e.names(&s.Names) })
	e.str(4, string(s.Scope))
	for i := range s.Versions {
		e.msg(7, func(e *pbEncoder) { e.version(&s.Versions[i]) })
	}
	if s.Conversion != nil {
		e.msg(9, func(e *pbEncoder) { e.conversion(s.Conversion) })
	}
	e.boolean(10, s.PreserveUnknownFields)
}

func (e *pbEncoder) names(n *CustomResourceDefinitionNames) {
	e.str(1, n.Plural)
	e.str(2, n.Singular)
	e.strs(3, n.ShortNames)
	e.str(4, n.Kind)
	e.str(5, n.ListKind)
	e.strs(6, n.Categories)
}

func (e *pbEncoder) version(v *CustomResourceDefinitionVersion) {
	e.str(1, v.Name)
	e.boolean(2, v.Served)
	e.boolean(3, v.Storage)
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
					e.str(1, sc.SpecReplicasPath)
					e.str(2, sc.StatusReplicasPath)
					e.optStr(3, sc.LabelSelectorPath)
				})
			}
		})
	}
	for _, col := range v.AdditionalPrinterColumns {
		e.msg(6, func(e *pbEncoder) {
			e.str(1, col.Name)
			e.str(2, col.Type)
			e.str(3, col.Format)
			e.str(4, col.Description)
			e.varint(5, int64(col.Priority))
			e.str(6, col.JSONPath)
		})
	}
	e.boolean(7, v.Deprecated)
	e.optStr(8, v.DeprecationWarning)
	for _, f := range v.SelectableFields {
		e.msg(9, func(e *pbEncoder) { e.str(1, f.JSONPath) })
	}
}

func (e *pbEncoder) conversion(c *CustomResourceConversion) {
	e.str(1, string(c.Strategy))
	if w := c.Webhook; w != nil {
		e.msg(2, func(e *pbEncoder) {
			if cc := w.ClientConfig; cc != nil {
				e.msg(2, func(e *pbEncoder) {
					if s := cc.Service; s != nil {
						e.msg(1, func(e *pbEncoder) {
							e.str(1, s.Namespace)
							e.str(2, s.Name)
							e.optStr(3, s.Path)
							if s.Port != nil {
								e.varint(4, int64(*s.Port))
							}
						})
					}
					e.bytes(2, cc.CABundle)
					e.optStr(3, cc.URL)
				})
			}
			e.strs(3, w.ConversionReviewVersions)
		})
	}
}

func (e *pbEncoder) status(s *CustomResourceDefinitionStatus) {
	for _, c := range s.Conditions {
		e.msg(1, func(e *pbEncoder) {
			e.str(1, string(c.Type))
			e.str(2, string(c.Status))
			e.raw(3, c.LastTransitionTime.Marshal)
			e.str(4, c.Reason)
			e.str(5, c.Message)
		})
	}
	e.msg(2, func(e *pbEncoder) { e.names(&s.AcceptedNames) })
	e.strs(3, s.StoredVersions)
}

func (e *pbEncoder) json(num protowire.Number, j *JSON) {
	e.msg(num, func(e *pbEncoder) { e.bytes(1, j.Raw) })
}

func (e *pbEncoder) schemaMap(num protowire.Number, m map[string]JSONSchemaProps) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		e.msg(num, func(e *pbEncoder) {
			e.str(1, k)
			e.msg(2, func(e *pbEncoder) { e.schema(&v) })
		})
	}
}

func (e *pbEncoder) orBool(num protowire.Number, o *JSONSchemaPropsOrBool) {
	if o == nil {
		return
	}
	e.msg(num, func(e *pbEncoder) {
		e.boolean(1, o.Allows)
		if o.Schema != nil {
			e.msg(2, func(e *pbEncoder) { e.schema(o.Schema) })
		}
	})
}

func (e *pbEncoder) schema(s *JSONSchemaProps) {
	e.str(1, s.ID)
	e.str(2, s.Schema)
	e.optStr(3, s.Ref)
	e.str(4, s.Description)
	e.str(5, s.Type)
	e.str(6, s.Format)
	e.str(7, s.Title)
	if s.Default != nil {
		e.json(8, s.Default)
	}
	e.optDouble(9, s.Maximum)
	e.boolean(10, s.ExclusiveMaximum)
	e.optDouble(11, s.Minimum)
	e.boolean(12, s.ExclusiveMinimum)
	e.optInt64(13, s.MaxLength)
	e.optInt64(14, s.MinLength)
	e.str(15, s.Pattern)
	e.optInt64(16, s.MaxItems)
	e.optInt64(17, s.MinItems)
	e.boolean(18, s.UniqueItems)
	e.optDouble(19, s.MultipleOf)
	for i := range s.Enum {
		e.json(20, &s.Enum[i])
	}
	e.optInt64(21, s.MaxProperties)
	e.optInt64(22, s.MinProperties)
	e.strs(23, s.Required)
	if s.Items != nil {
		e.msg(24, func(e *pbEncoder) {
			if s.Items.Schema != nil {
				e.msg(1, func(e *pbEncoder) { e.schema(s.Items.Schema) })
			}
			for i := range s.Items.JSONSchemas {
				e.msg(2, func(e *pbEncoder) { e.schema(&s.Items.JSONSchemas[i]) })
			}
		})
	}
	for i := range s.AllOf {
		e.msg(25, func(e *pbEncoder) { e.schema(&s.AllOf[i]) })
	}
	for i := range s.OneOf {
		e.msg(26, func(e *pbEncoder) { e.schema(&s.OneOf[i]) })
	}
	for i := range s.AnyOf {
		e.msg(27, func(e *pbEncoder) { e.schema(&s.AnyOf[i]) })
	}
	if s.Not != nil {
		e.msg(28, func(e *pbEncoder) { e.schema(s.Not) })
	}
	e.schemaMap(29, s.Properties)
	e.orBool(30, s.AdditionalProperties)
	e.schemaMap(31, s.PatternProperties)
	e.dependencies(32, s.Dependencies)
	e.orBool(33, s.AdditionalItems)
	e.schemaMap(34, s.Definitions)
	if d := s.ExternalDocs; d != nil {
		e.msg(35, func(e *pbEncoder) {
			e.str(1, d.Description)
			e.str(2, d.URL)
		})
	}
	if s.Example != nil {
		e.json(36, s.Example)
	}
	e.boolean(37, s.Nullable)
	e.optBool(38, s.XPreserveUnknownFields)
	e.boolean(39, s.XEmbeddedResource)
	e.boolean(40, s.XIntOrString)
	e.strs(41, s.XListMapKeys)
	e.optStr(42, s.XListType)
	e.optStr(43, s.XMapType)
	for _, r := range s.XValidations {
		e.msg(44, func(e *pbEncoder) {
			e.str(1, r.Rule)
			e.str(2, r.Message)
			e.str(3, r.MessageExpression)
			e.optStr(4, r.Reason)
			e.str(5, r.FieldPath)
			e.optBool(6, r.OptionalOldSelf)
		})
	}
}

// dependencies writes upstream's JSONSchemaPropsOrStringArray entries: a JSON list of property
// names, or a schema.
func (e *pbEncoder) dependencies(num protowire.Number, m map[string]json.RawMessage) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := m[k]
		var props []string
		var schema *JSONSchemaProps
		if err := json.Unmarshal(raw, &props); err != nil {
			schema = &JSONSchemaProps{}
			if err := json.Unmarshal(raw, schema); err != nil {
				e.err = fmt.Errorf("dependencies %q: neither a list of properties nor a schema: %w", k, err)
				return
			}
		}
		e.msg(num, func(e *pbEncoder) {
			e.str(1, k)
			e.msg(2, func(e *pbEncoder) {
				if schema != nil {
					e.msg(1, func(e *pbEncoder) { e.schema(schema) })
				}
				e.strs(2, props)
			})
		})
	}
}

// field is one decoded field: its varint, fixed64 or length-delimited value.
type field struct {
	varint uint64
	fixed  uint64
	bytes  []byte
}

func (f field) str() string    { return string(f.bytes) }
func (f field) strp() *string  { s := string(f.bytes); return &s }
func (f field) boolean() bool  { return f.varint != 0 }
func (f field) int64p() *int64 { v := int64(f.varint); return &v }
func (f field) float64p() *float64 {
	v := math.Float64frombits(f.fixed)
	return &v
}

var errMalformed = errors.New("apiextensions.k8s.io/v1 protobuf: malformed message")

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
		case protowire.Fixed64Type:
			v.fixed, n = protowire.ConsumeFixed64(data)
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

func decodeCRD(data []byte, c *CustomResourceDefinition) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			return c.ObjectMeta.Unmarshal(v.bytes)
		case 2:
			return decodeSpec(v.bytes, &c.Spec)
		case 3:
			return decodeStatus(v.bytes, &c.Status)
		}
		return nil
	})
}

func decodeSpec(data []byte, s *CustomResourceDefinitionSpec) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			s.Group = v.str()
		case 3:
			return decodeNames(v.bytes, &s.Names)
		case 4:
			s.Scope = ResourceScope(v.str())
		case 7:
			var ver CustomResourceDefinitionVersion
			if err := decodeVersion(v.bytes, &ver); err != nil {
				return err
			}
			s.Versions = append(s.Versions, ver)
		case 9:
			s.Conversion = &CustomResourceConversion{}
			return decodeConversion(v.bytes, s.Conversion)
		case 10:
			s.PreserveUnknownFields = v.boolean()
		}
		return nil
	})
}

func decodeNames(data []byte, n *CustomResourceDefinitionNames) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			n.Plural = v.str()
		case 2:
			n.Singular = v.str()
		case 3:
			n.ShortNames = append(n.ShortNames, v.str())
		case 4:
			n.Kind = v.str()
		case 5:
			n.ListKind = v.str()
		case 6:
			n.Categories = append(n.Categories, v.str())
		}
		return nil
	})
}

func decodeVersion(data []byte, ver *CustomResourceDefinitionVersion) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			ver.Name = v.str()
		case 2:
			ver.Served = v.boolean()
		case 3:
			ver.Storage = v.boolean()
		case 4:
			ver.Schema = &CustomResourceValidation{}
			return eachField(v.bytes, func(num protowire.Number, v field) error {
				if num == 1 {
					ver.Schema.OpenAPIV3Schema = &JSONSchemaProps{}
					return decodeSchema(v.bytes, ver.Schema.OpenAPIV3Schema)
				}
				return nil
			})
		case 5:
			ver.Subresources = &CustomResourceSubresources{}
			return eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					ver.Subresources.Status = &CustomResourceSubresourceStatus{}
				case 2:
					sc := &CustomResourceSubresourceScale{}
					ver.Subresources.Scale = sc
					return eachField(v.bytes, func(num protowire.Number, v field) error {
						switch num {
						case 1:
							sc.SpecReplicasPath = v.str()
						case 2:
							sc.StatusReplicasPath = v.str()
						case 3:
							sc.LabelSelectorPath = v.strp()
						}
						return nil
					})
				}
				return nil
			})
		case 6:
			var col CustomResourceColumnDefinition
			if err := eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					col.Name = v.str()
				case 2:
					col.Type = v.str()
				case 3:
					col.Format = v.str()
				case 4:
					col.Description = v.str()
				case 5:
					col.Priority = int32(v.varint)
				case 6:
					col.JSONPath = v.str()
				}
				return nil
			}); err != nil {
				return err
			}
			ver.AdditionalPrinterColumns = append(ver.AdditionalPrinterColumns, col)
		case 7:
			ver.Deprecated = v.boolean()
		case 8:
			ver.DeprecationWarning = v.strp()
		case 9:
			var f SelectableField
			if err := eachField(v.bytes, func(num protowire.Number, v field) error {
				if num == 1 {
					f.JSONPath = v.str()
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
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			c.Strategy = ConversionStrategyType(v.str())
		case 2:
			w := &WebhookConversion{}
			c.Webhook = w
			return eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 2:
					cc := &WebhookClientConfig{}
					w.ClientConfig = cc
					return eachField(v.bytes, func(num protowire.Number, v field) error {
						switch num {
						case 1:
							s := &ServiceReference{}
							cc.Service = s
							return eachField(v.bytes, func(num protowire.Number, v field) error {
								switch num {
								case 1:
									s.Namespace = v.str()
								case 2:
									s.Name = v.str()
								case 3:
									s.Path = v.strp()
								case 4:
									p := int32(v.varint)
									s.Port = &p
								}
								return nil
							})
						case 2:
							cc.CABundle = append([]byte{}, v.bytes...)
						case 3:
							cc.URL = v.strp()
						}
						return nil
					})
				case 3:
					w.ConversionReviewVersions = append(w.ConversionReviewVersions, v.str())
				}
				return nil
			})
		}
		return nil
	})
}

func decodeStatus(data []byte, s *CustomResourceDefinitionStatus) error {
	return eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			var c CustomResourceDefinitionCondition
			if err := eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					c.Type = CustomResourceDefinitionConditionType(v.str())
				case 2:
					c.Status = ConditionStatus(v.str())
				case 3:
					var t metav1.Time
					if err := t.Unmarshal(v.bytes); err != nil {
						return err
					}
					c.LastTransitionTime = t
				case 4:
					c.Reason = v.str()
				case 5:
					c.Message = v.str()
				}
				return nil
			}); err != nil {
				return err
			}
			s.Conditions = append(s.Conditions, c)
		case 2:
			return decodeNames(v.bytes, &s.AcceptedNames)
		case 3:
			s.StoredVersions = append(s.StoredVersions, v.str())
		}
		return nil
	})
}

func decodeJSON(data []byte) (JSON, error) {
	var j JSON
	err := eachField(data, func(num protowire.Number, v field) error {
		if num == 1 {
			j.Raw = append([]byte{}, v.bytes...)
		}
		return nil
	})
	return j, err
}

func decodeSchemaInto(data []byte) (JSONSchemaProps, error) {
	var s JSONSchemaProps
	err := decodeSchema(data, &s)
	return s, err
}

// decodeSchemaMapEntry reads one map<string, JSONSchemaProps> entry into m.
func decodeSchemaMapEntry(data []byte, m *map[string]JSONSchemaProps) error {
	var key string
	var value JSONSchemaProps
	if err := eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			key = v.str()
		case 2:
			return decodeSchema(v.bytes, &value)
		}
		return nil
	}); err != nil {
		return err
	}
	if *m == nil {
		*m = map[string]JSONSchemaProps{}
	}
	(*m)[key] = value
	return nil
}

func decodeOrBool(data []byte) (*JSONSchemaPropsOrBool, error) {
	o := &JSONSchemaPropsOrBool{}
	err := eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			o.Allows = v.boolean()
		case 2:
			o.Schema = &JSONSchemaProps{}
			return decodeSchema(v.bytes, o.Schema)
		}
		return nil
	})
	return o, err
}

func decodeSchema(data []byte, s *JSONSchemaProps) error {
	return eachField(data, func(num protowire.Number, v field) error {
		var err error
		switch num {
		case 1:
			s.ID = v.str()
		case 2:
			s.Schema = v.str()
		case 3:
			s.Ref = v.strp()
		case 4:
			s.Description = v.str()
		case 5:
			s.Type = v.str()
		case 6:
			s.Format = v.str()
		case 7:
			s.Title = v.str()
		case 8:
			var j JSON
			j, err = decodeJSON(v.bytes)
			s.Default = &j
		case 9:
			s.Maximum = v.float64p()
		case 10:
			s.ExclusiveMaximum = v.boolean()
		case 11:
			s.Minimum = v.float64p()
		case 12:
			s.ExclusiveMinimum = v.boolean()
		case 13:
			s.MaxLength = v.int64p()
		case 14:
			s.MinLength = v.int64p()
		case 15:
			s.Pattern = v.str()
		case 16:
			s.MaxItems = v.int64p()
		case 17:
			s.MinItems = v.int64p()
		case 18:
			s.UniqueItems = v.boolean()
		case 19:
			s.MultipleOf = v.float64p()
		case 20:
			var j JSON
			j, err = decodeJSON(v.bytes)
			s.Enum = append(s.Enum, j)
		case 21:
			s.MaxProperties = v.int64p()
		case 22:
			s.MinProperties = v.int64p()
		case 23:
			s.Required = append(s.Required, v.str())
		case 24:
			s.Items = &JSONSchemaPropsOrArray{}
			err = eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					s.Items.Schema = &JSONSchemaProps{}
					return decodeSchema(v.bytes, s.Items.Schema)
				case 2:
					item, err := decodeSchemaInto(v.bytes)
					s.Items.JSONSchemas = append(s.Items.JSONSchemas, item)
					return err
				}
				return nil
			})
		case 25, 26, 27:
			var item JSONSchemaProps
			item, err = decodeSchemaInto(v.bytes)
			switch num {
			case 25:
				s.AllOf = append(s.AllOf, item)
			case 26:
				s.OneOf = append(s.OneOf, item)
			default:
				s.AnyOf = append(s.AnyOf, item)
			}
		case 28:
			s.Not = &JSONSchemaProps{}
			err = decodeSchema(v.bytes, s.Not)
		case 29:
			err = decodeSchemaMapEntry(v.bytes, &s.Properties)
		case 30:
			s.AdditionalProperties, err = decodeOrBool(v.bytes)
		case 31:
			err = decodeSchemaMapEntry(v.bytes, &s.PatternProperties)
		case 32:
			err = decodeDependency(v.bytes, s)
		case 33:
			s.AdditionalItems, err = decodeOrBool(v.bytes)
		case 34:
			err = decodeSchemaMapEntry(v.bytes, &s.Definitions)
		case 35:
			d := &ExternalDocumentation{}
			s.ExternalDocs = d
			err = eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					d.Description = v.str()
				case 2:
					d.URL = v.str()
				}
				return nil
			})
		case 36:
			var j JSON
			j, err = decodeJSON(v.bytes)
			s.Example = &j
		case 37:
			s.Nullable = v.boolean()
		case 38:
			b := v.boolean()
			s.XPreserveUnknownFields = &b
		case 39:
			s.XEmbeddedResource = v.boolean()
		case 40:
			s.XIntOrString = v.boolean()
		case 41:
			s.XListMapKeys = append(s.XListMapKeys, v.str())
		case 42:
			s.XListType = v.strp()
		case 43:
			s.XMapType = v.strp()
		case 44:
			var r ValidationRule
			err = eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					r.Rule = v.str()
				case 2:
					r.Message = v.str()
				case 3:
					r.MessageExpression = v.str()
				case 4:
					r.Reason = v.strp()
				case 5:
					r.FieldPath = v.str()
				case 6:
					b := v.boolean()
					r.OptionalOldSelf = &b
				}
				return nil
			})
			s.XValidations = append(s.XValidations, r)
		}
		return err
	})
}

// decodeDependency reads one dependencies entry (a schema or a list of property names) back into
// its JSON form.
func decodeDependency(data []byte, s *JSONSchemaProps) error {
	var key string
	var schema *JSONSchemaProps
	var props []string
	if err := eachField(data, func(num protowire.Number, v field) error {
		switch num {
		case 1:
			key = v.str()
		case 2:
			return eachField(v.bytes, func(num protowire.Number, v field) error {
				switch num {
				case 1:
					schema = &JSONSchemaProps{}
					return decodeSchema(v.bytes, schema)
				case 2:
					props = append(props, v.str())
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		return err
	}
	var raw []byte
	var err error
	if schema != nil {
		raw, err = json.Marshal(schema)
	} else {
		if props == nil {
			props = []string{}
		}
		raw, err = json.Marshal(props)
	}
	if err != nil {
		return err
	}
	if s.Dependencies == nil {
		s.Dependencies = map[string]json.RawMessage{}
	}
	s.Dependencies[key] = raw
	return nil
}
